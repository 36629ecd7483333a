import type { Allowlists } from '../../domain/shared/allowlists.ts';
import type { Permission } from '../../domain/shared/permissions.ts';

/** A registered app: public, so it proves itself by PKCE, never by a secret (docs/decisions/oauth.md). */
export interface OAuthApp {
  clientId: string;
  name: string;
  redirectUris: string[];
  createdAt: string;
}

/** A person's consent: the app, in one workspace, with these scopes and lists. */
export interface Consent extends Allowlists {
  clientId: string;
  userId: string;
  workspaceId: string;
  scopes: Permission[];
  redirectUri: string;
  state: string | undefined;
  codeChallenge: string;
  codeChallengeMethod: 'S256';
}

/** The token endpoint's answer, as the OAuth library made it. */
export interface TokenAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * Apps and the authorization server (infra/oauth): registration, the code a consent gives, and
 * the token endpoint (code exchange with PKCE, rotating refresh tokens).
 */
export interface OAuthPorts {
  register(ownerUserId: string, name: string, redirectUris: string[]): Promise<OAuthApp>;
  appsOf(ownerUserId: string): Promise<OAuthApp[]>;
  findApp(clientId: string): Promise<OAuthApp | undefined>;
  /** Records the approval and answers the redirect that carries its code. */
  approve(consent: Consent): Promise<string>;
  token(body: Record<string, string>, headers: Record<string, string>): Promise<TokenAnswer>;
}
