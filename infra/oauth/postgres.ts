import crypto from 'node:crypto';
import OAuth2Server, {
  type AuthorizationCode,
  type AuthorizationCodeModel,
  type Client,
  OAuthError,
  type RefreshToken,
  type RefreshTokenModel,
  Request,
  Response,
  type Token,
  type User,
} from '@node-oauth/oauth2-server';
import type pg from 'pg';
import type { Connection, Consent, OAuthApp, OAuthPorts, OAuthSweep, TokenAnswer } from './port.ts';
import {
  ACCESS_TOKEN_PREFIX,
  ACCESS_TOKEN_TTL_S,
  REFRESH_TOKEN_PREFIX,
  APPROVAL_TTL_MS,
  CODE_TTL_S,
  REFRESH_TOKEN_TTL_S,
  requestedScopes,
} from '../../domain/oauth/authority.ts';

/**
 * Apps, approvals (`oauth_grants`: one per app, person and workspace), codes and tokens. Codes and
 * tokens are kept as SHA-256 digests only: each is 256 random bits, so a fast digest is enough,
 * and a copy of the database opens nothing. Rows, not events: they are credentials, as the
 * sign-in challenges are (docs/decisions/oauth.md).
 */
export const OAUTH_SCHEMA = `
CREATE TABLE IF NOT EXISTS oauth_apps (
  client_id text PRIMARY KEY,
  name text NOT NULL,
  redirect_uris text[] NOT NULL,
  owner_user_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS oauth_apps_owner ON oauth_apps (owner_user_id, created_at);
CREATE TABLE IF NOT EXISTS oauth_grants (
  id text PRIMARY KEY,
  client_id text NOT NULL REFERENCES oauth_apps (client_id),
  user_id text NOT NULL,
  workspace_id text NOT NULL,
  scopes text[] NOT NULL,
  address_allowlist text[],
  domain_allowlist text[],
  expires_at timestamptz,
  revoked_at timestamptz,
  approved_at timestamptz NOT NULL,
  UNIQUE (client_id, user_id, workspace_id)
);
CREATE TABLE IF NOT EXISTS oauth_codes (
  code_hash text PRIMARY KEY,
  grant_id text NOT NULL REFERENCES oauth_grants (id),
  redirect_uri text NOT NULL,
  scopes text[] NOT NULL,
  code_challenge text NOT NULL,
  code_challenge_method text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE TABLE IF NOT EXISTS oauth_access_tokens (
  token_hash text PRIMARY KEY,
  grant_id text NOT NULL REFERENCES oauth_grants (id),
  expires_at timestamptz NOT NULL,
  revoked_at timestamptz
);
CREATE INDEX IF NOT EXISTS oauth_access_tokens_grant ON oauth_access_tokens (grant_id);
CREATE TABLE IF NOT EXISTS oauth_refresh_tokens (
  token_hash text PRIMARY KEY,
  grant_id text NOT NULL REFERENCES oauth_grants (id),
  scopes text[] NOT NULL,
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
CREATE INDEX IF NOT EXISTS oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id);`;

const digest = (secret: string) => crypto.createHash('sha256').update(secret).digest('hex');
const random = (prefix: string) => prefix + crypto.randomBytes(32).toString('base64url');

interface AppRow {
  client_id: string;
  name: string;
  redirect_uris: string[];
  created_at: Date;
}

const appOf = (r: AppRow): OAuthApp => ({
  clientId: r.client_id,
  name: r.name,
  redirectUris: r.redirect_uris,
  createdAt: r.created_at.toISOString(),
});

/** The person behind a code or token, and the approval it stands on. */
interface Holder extends User {
  id: string;
  grantId: string;
}

/**
 * The store behind @node-oauth/oauth2-server (its model) and the ports the pages use. Every app is
 * public (no secret): PKCE with S256 is required of every authorization, so a code is worth
 * nothing without the verifier of the app that asked for it.
 */
export class PostgresOAuth implements OAuthPorts {
  private readonly server: OAuth2Server;

  constructor(private readonly pool: pg.Pool) {
    this.server = new OAuth2Server({
      model: this.model(),
      accessTokenLifetime: ACCESS_TOKEN_TTL_S,
      refreshTokenLifetime: REFRESH_TOKEN_TTL_S,
      authorizationCodeLifetime: CODE_TTL_S,
      alwaysIssueNewRefreshToken: true,
      allowEmptyState: true,
      requireClientAuthentication: { authorization_code: false, refresh_token: false },
    });
  }

  /**
   * A code is kept until it expires (60 s), a refresh token until it expires or a day after its
   * use (rotation: a spent one is refused as an unknown one is). An access token is kept as long
   * as a refresh token of its time could still renew it, so its holder hears
   * `expired_access_token` (renew) rather than `invalid_access_token` (reconnect) all that time.
   */
  async sweep(now: Date): Promise<OAuthSweep> {
    const count = async (query: string, params: unknown[]) => (await this.pool.query(query, params)).rowCount ?? 0;
    return {
      codes: await count('DELETE FROM oauth_codes WHERE expires_at < $1', [now]),
      accessTokens: await count(
        'DELETE FROM oauth_access_tokens WHERE expires_at < $1::timestamptz - make_interval(secs => $2)',
        [now, REFRESH_TOKEN_TTL_S],
      ),
      refreshTokens: await count(
        "DELETE FROM oauth_refresh_tokens WHERE expires_at < $1 OR used_at < $1::timestamptz - interval '1 day'",
        [now],
      ),
    };
  }

  async register(ownerUserId: string, name: string, redirectUris: string[]): Promise<OAuthApp> {
    const clientId = `app_${crypto.randomBytes(12).toString('hex')}`;
    const { rows } = await this.pool.query<AppRow>(
      `INSERT INTO oauth_apps (client_id, name, redirect_uris, owner_user_id) VALUES ($1, $2, $3, $4)
       RETURNING client_id, name, redirect_uris, created_at`,
      [clientId, name, redirectUris, ownerUserId],
    );
    return appOf(rows[0]!);
  }

  async appsOf(ownerUserId: string): Promise<OAuthApp[]> {
    const { rows } = await this.pool.query<AppRow>(
      'SELECT client_id, name, redirect_uris, created_at FROM oauth_apps WHERE owner_user_id = $1 ORDER BY created_at, client_id',
      [ownerUserId],
    );
    return rows.map(appOf);
  }

  async findApp(clientId: string): Promise<OAuthApp | undefined> {
    const { rows } = await this.pool.query<AppRow>(
      'SELECT client_id, name, redirect_uris, created_at FROM oauth_apps WHERE client_id = $1',
      [clientId],
    );
    return rows[0] && appOf(rows[0]);
  }

  /**
   * The approval is stored first (a new consent replaces the person's earlier one for this app and
   * workspace, and starts its 90 days again); the library then makes the code and the redirect.
   * When the earlier approval had been withdrawn or had ended, its tokens end for good: connecting
   * again must not bring back tokens the person disconnected.
   */
  async approve(c: Consent): Promise<string> {
    const { rows } = await this.pool.query<{ id: string }>(
      `WITH ended AS (
         SELECT id FROM oauth_grants WHERE client_id = $2 AND user_id = $3 AND workspace_id = $4
           AND (revoked_at IS NOT NULL OR expires_at <= now())
       ),
       access AS (
         UPDATE oauth_access_tokens SET revoked_at = now() WHERE grant_id IN (SELECT id FROM ended) AND revoked_at IS NULL
       ),
       refresh AS (
         UPDATE oauth_refresh_tokens SET used_at = now() WHERE grant_id IN (SELECT id FROM ended) AND used_at IS NULL
       )
       INSERT INTO oauth_grants (id, client_id, user_id, workspace_id, scopes, address_allowlist, domain_allowlist, expires_at, approved_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, now())
       ON CONFLICT (client_id, user_id, workspace_id) DO UPDATE SET
         scopes = excluded.scopes, address_allowlist = excluded.address_allowlist,
         domain_allowlist = excluded.domain_allowlist, expires_at = excluded.expires_at,
         revoked_at = NULL, approved_at = now()
       RETURNING id`,
      [
        `grt_${crypto.randomBytes(12).toString('hex')}`,
        c.clientId,
        c.userId,
        c.workspaceId,
        c.scopes,
        c.addressAllowlist,
        c.domainAllowlist,
        new Date(Date.now() + APPROVAL_TTL_MS),
      ],
    );
    const holder: Holder = { id: c.userId, grantId: rows[0]!.id };
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: c.clientId,
      redirect_uri: c.redirectUri,
      scope: c.scopes.join(' '),
      code_challenge: c.codeChallenge,
      code_challenge_method: c.codeChallengeMethod,
      ...(c.state === undefined ? {} : { state: c.state }),
    };
    const response = new Response({ headers: {} });
    await this.server.authorize(new Request({ method: 'POST', query: {}, body: params, headers: {} }), response, {
      authenticateHandler: { handle: () => holder },
    });
    return String(response.headers?.location);
  }

  async token(body: Record<string, string>, headers: Record<string, string>): Promise<TokenAnswer> {
    const response = new Response({ headers: {} });
    try {
      await this.server.token(
        new Request({
          method: 'POST',
          query: {},
          body,
          headers,
        }),
        response,
      );
      return { status: response.status ?? 200, headers: { ...response.headers }, body: response.body };
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      return {
        status: error.code,
        headers: { ...response.headers },
        body: { error: error.name, error_description: error.message },
      };
    }
  }

  async revoke(token: string, clientId: string): Promise<void> {
    const hash = digest(token);
    if (token.startsWith(ACCESS_TOKEN_PREFIX)) {
      await this.pool.query(
        `UPDATE oauth_access_tokens t SET revoked_at = now() FROM oauth_grants g
         WHERE t.token_hash = $1 AND g.id = t.grant_id AND g.client_id = $2 AND t.revoked_at IS NULL`,
        [hash, clientId],
      );
      return;
    }
    // RFC 7009 §2.1: a refresh token's access tokens go with it.
    await this.pool.query(
      `WITH spent AS (
         UPDATE oauth_refresh_tokens t SET used_at = now() FROM oauth_grants g
         WHERE t.token_hash = $1 AND g.id = t.grant_id AND g.client_id = $2 RETURNING t.grant_id
       )
       UPDATE oauth_access_tokens SET revoked_at = now()
       WHERE grant_id IN (SELECT grant_id FROM spent) AND revoked_at IS NULL`,
      [hash, clientId],
    );
  }

  async connectionsOf(userId: string): Promise<Connection[]> {
    const { rows } = await this.pool.query(
      `SELECT g.id, g.client_id, a.name AS app_name, g.workspace_id, coalesce(w.name, '') AS workspace_name, g.scopes,
              g.address_allowlist, g.domain_allowlist, g.approved_at, g.expires_at
       FROM oauth_grants g JOIN oauth_apps a ON a.client_id = g.client_id
       LEFT JOIN workspaces w ON w.id = g.workspace_id
       WHERE g.user_id = $1 AND g.revoked_at IS NULL AND (g.expires_at IS NULL OR g.expires_at > now())
       ORDER BY g.approved_at DESC, g.id`,
      [userId],
    );
    return rows.map((r) => ({
      grantId: r.id,
      clientId: r.client_id,
      appName: r.app_name,
      workspaceId: r.workspace_id,
      workspaceName: r.workspace_name,
      scopes: r.scopes,
      addressAllowlist: r.address_allowlist,
      domainAllowlist: r.domain_allowlist,
      approvedAt: r.approved_at.toISOString(),
      expiresAt: r.expires_at?.toISOString() ?? null,
    }));
  }

  async disconnect(userId: string, grantId: string): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      'UPDATE oauth_grants SET revoked_at = now() WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL',
      [grantId, userId],
    );
    return (rowCount ?? 0) > 0;
  }

  /** The library's model: clients, codes and tokens in PostgreSQL. */
  private model(): AuthorizationCodeModel & RefreshTokenModel {
    const pool = this.pool;
    const client = (app: OAuthApp): Client => ({
      id: app.clientId,
      redirectUris: app.redirectUris,
      grants: ['authorization_code', 'refresh_token'],
    });
    return {
      getClient: async (clientId) => {
        const app = await this.findApp(clientId);
        return app ? client(app) : false;
      },
      validateScope: async (_user, _client, scope) => {
        const asked = requestedScopes((scope ?? []).join(' '));
        return 'scopes' in asked ? asked.scopes : false;
      },
      generateAuthorizationCode: async () => crypto.randomBytes(32).toString('base64url'),
      generateAccessToken: async () => random(ACCESS_TOKEN_PREFIX),
      generateRefreshToken: async () => random(REFRESH_TOKEN_PREFIX),
      saveAuthorizationCode: async (code, c, user) => {
        const holder = user as Holder;
        await pool.query(
          `INSERT INTO oauth_codes (code_hash, grant_id, redirect_uri, scopes, code_challenge, code_challenge_method, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7)`,
          [
            digest(code.authorizationCode),
            holder.grantId,
            code.redirectUri,
            code.scope ?? [],
            code.codeChallenge,
            code.codeChallengeMethod,
            code.expiresAt,
          ],
        );
        return { ...code, client: c, user };
      },
      getAuthorizationCode: async (authorizationCode) => {
        const { rows } = await pool.query(
          `SELECT c.redirect_uri, c.scopes, c.code_challenge, c.code_challenge_method, c.expires_at, g.id AS grant_id, g.client_id, g.user_id
           FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id WHERE c.code_hash = $1`,
          [digest(authorizationCode)],
        );
        const r = rows[0];
        if (!r) return false;
        const code: AuthorizationCode = {
          authorizationCode,
          expiresAt: r.expires_at,
          redirectUri: r.redirect_uri,
          scope: r.scopes,
          codeChallenge: r.code_challenge,
          codeChallengeMethod: r.code_challenge_method,
          client: { id: r.client_id, grants: [] },
          user: { id: r.user_id, grantId: r.grant_id } satisfies Holder,
        };
        return code;
      },
      // One exchange per code: of two racing, only one deletes the row; the other is invalid_grant.
      revokeAuthorizationCode: async (code) =>
        ((await pool.query('DELETE FROM oauth_codes WHERE code_hash = $1', [digest(code.authorizationCode)]))
          .rowCount ?? 0) > 0,
      saveToken: async (token, c, user) => {
        const holder = user as Holder;
        await pool.query('INSERT INTO oauth_access_tokens (token_hash, grant_id, expires_at) VALUES ($1, $2, $3)', [
          digest(token.accessToken),
          holder.grantId,
          token.accessTokenExpiresAt,
        ]);
        if (token.refreshToken)
          await pool.query(
            'INSERT INTO oauth_refresh_tokens (token_hash, grant_id, scopes, expires_at) VALUES ($1, $2, $3, $4)',
            [digest(token.refreshToken), holder.grantId, token.scope ?? [], token.refreshTokenExpiresAt],
          );
        const saved: Token = { ...token, client: c, user };
        return saved;
      },
      getAccessToken: async (accessToken) => {
        const { rows } = await pool.query(
          `SELECT t.expires_at, g.id AS grant_id, g.client_id, g.user_id, g.scopes FROM oauth_access_tokens t
           JOIN oauth_grants g ON g.id = t.grant_id WHERE t.token_hash = $1 AND t.revoked_at IS NULL`,
          [digest(accessToken)],
        );
        const r = rows[0];
        if (!r) return false;
        const token: Token = {
          accessToken,
          accessTokenExpiresAt: r.expires_at,
          scope: r.scopes,
          client: { id: r.client_id, grants: [] },
          user: { id: r.user_id, grantId: r.grant_id } satisfies Holder,
        };
        return token;
      },
      // A refresh token renews only while its approval stands and the person is still a member.
      getRefreshToken: async (refreshToken) => {
        const { rows } = await pool.query(
          `SELECT t.expires_at, t.scopes, g.id AS grant_id, g.client_id, g.user_id FROM oauth_refresh_tokens t
           JOIN oauth_grants g ON g.id = t.grant_id
           JOIN memberships m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id
           WHERE t.token_hash = $1 AND t.used_at IS NULL AND g.revoked_at IS NULL
             AND (g.expires_at IS NULL OR g.expires_at > now())`,
          [digest(refreshToken)],
        );
        const r = rows[0];
        if (!r) return false;
        const token: RefreshToken = {
          refreshToken,
          refreshTokenExpiresAt: r.expires_at,
          scope: r.scopes,
          client: { id: r.client_id, grants: [] },
          user: { id: r.user_id, grantId: r.grant_id } satisfies Holder,
        };
        return token;
      },
      // Rotation: a refresh token is spent by its first use; of two racing, one wins.
      revokeToken: async (token) =>
        ((
          await pool.query(
            'UPDATE oauth_refresh_tokens SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL',
            [digest(token.refreshToken)],
          )
        ).rowCount ?? 0) > 0,
    };
  }
}
