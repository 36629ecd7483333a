/**
 * The authorization server as the pages see it: its port lives with its adapter in infra/oauth,
 * and api/ reaches infra only through commands' and projections' types.
 */
export type { Connection, Consent, OAuthApp, OAuthPorts, TokenAnswer } from '../../infra/oauth/port.ts';
