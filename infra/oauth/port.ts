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

/** An app a person connected to one of their workspaces. */
export interface Connection {
  grantId: string;
  clientId: string;
  appName: string;
  workspaceId: string;
  workspaceName: string;
  scopes: string[];
  addressAllowlist: string[] | null;
  domainAllowlist: string[] | null;
  approvedAt: string;
  expiresAt: string | null;
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
  /**
   * RFC 7009: an app gives up a token of its own. An access token stops at once; a refresh token
   * takes the approval's access tokens with it. Tokens of other apps, or unknown, change nothing.
   */
  revoke(token: string, clientId: string): Promise<void>;
  /** The apps a person connected, with their approvals still standing. */
  connectionsOf(userId: string): Promise<Connection[]>;
  /** The person withdraws an approval of theirs: its tokens answer `grant_required` from now on. */
  disconnect(userId: string, grantId: string): Promise<boolean>;
  /** Deletes codes and tokens that can no longer be used nor be told apart from unknown ones. */
  sweep(now: Date): Promise<OAuthSweep>;
}

/** How many rows of each kind a sweep deleted. */
export interface OAuthSweep {
  codes: number;
  accessTokens: number;
  refreshTokens: number;
}
