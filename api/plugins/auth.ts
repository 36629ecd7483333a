import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type pg from 'pg';
import { hashSecret, parseToken } from '../../commands/api-keys/token.ts';
import { viewOnlyOf } from '../../domain/members/sending.ts';
import { ACCESS_TOKEN_PREFIX, grantRefusal, tokenAuthority } from '../../domain/oauth/authority.ts';
import { isPermission, PERMISSIONS, type Permission } from '../../domain/shared/permissions.ts';
import type { KeyAdmissions } from '../../projections/api-keys/admission.ts';
import { admitToken, type MemberReach, memberReach, workspaceExists } from '../../projections/oauth/admission.ts';
import type { Credential } from '../credential.ts';
import { storableText } from '../input.ts';
import { ApiError } from '../errors/api-error.ts';
import type { RequestLog } from '../request-log.ts';
import { rateLimited, rateLimitHeaders, rateLimitState, type RateLimiter, type RateLimitState } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyRequest {
    errorCode: string | null;
  }
}

const REFUSALS = {
  revoked_api_key: 'This API key was revoked.',
  expired_api_key: 'This API key has expired.',
  invalid_access_token: 'This access token is not valid: connect the app again.',
  expired_access_token: 'This access token has expired: renew it with the refresh token.',
  grant_required: 'The person disconnected this app: connect it again.',
  grant_expired: "The person's approval of this app has ended: connect it again.",
  grant_workspace_gone: 'The workspace this app was connected to is gone.',
  grant_access_lost: 'The person who connected this app is no longer a member of the workspace: connect it again.',
} as const;

const NO_GRANTS: MemberReach = { addresses: [], domains: [], viewerAddresses: [], viewerDomains: [] };

type Admitted = { credential: Credential | null; refusal: ApiError | null; rateLimit: RateLimitState };

/**
 * An OAuth access token: its approval and the person's current standing read in one round trip
 * with the rate-limit count, a second only for a person with direct grants or no longer a member
 * (projections/oauth/admission.ts); a token whose approval no longer
 * stands says why (the `grant_*` codes) before saying it expired, since renewing would not help.
 */
async function admitAccessToken(pool: pg.Pool, rateLimiter: RateLimiter, token: string, ip: string): Promise<Admitted> {
  const window = rateLimiter.window();
  const now = new Date(window.now);
  const row = await admitToken(pool, {
    tokenHash: hashSecret(token),
    now,
    fallbackIdentity: `ip:${ip}`,
    windowStart: window.start,
  });
  const rateLimit = rateLimitState(row.count, window);
  const refuse = (code: keyof typeof REFUSALS) => ({
    credential: null,
    refusal: new ApiError(code, REFUSALS[code]),
    rateLimit,
  });
  if (row.grant_id === null || row.revoked) return refuse('invalid_access_token');
  const refusal = grantRefusal(
    {
      revoked: row.grant_revoked,
      expiresAt: row.grant_expires_at,
      workspaceExists: row.is_member || (await workspaceExists(pool, row.workspace_id)),
      isMember: row.is_member,
    },
    now,
  );
  if (refusal) return refuse(refusal);
  if (row.expired) return refuse('expired_access_token');
  const reach = row.has_grants ? await memberReach(pool, row.workspace_id, row.user_id) : NO_GRANTS;
  const granted = row.scopes.filter(isPermission);
  const authority = tokenAuthority(
    { scopes: granted, addressAllowlist: row.address_allowlist, domainAllowlist: row.domain_allowlist },
    {
      isOwner: row.is_owner,
      rolePermissions: row.role_permissions,
      addresses: reach.addresses,
      domains: reach.domains,
    },
  );
  const credential: Credential = {
    kind: 'oauth',
    id: null,
    workspaceId: row.workspace_id,
    mode: 'live',
    grantedScopes: granted,
    scopes: authority.scopes,
    roleId: null,
    addressAllowlist: authority.addressAllowlist,
    domainAllowlist: authority.domainAllowlist,
    clientId: row.client_id,
    expiresAt: row.grant_expires_at?.toISOString() ?? null,
    connectedByOwner: row.is_owner,
    holdsEveryPermission: row.is_owner || holdsEvery(row.role_permissions),
    userId: row.user_id,
    elevatedUntil: row.elevated_until?.toISOString() ?? null,
    viewOnly: viewOnlyOf({
      isOwner: row.is_owner,
      rolePermissions: row.role_permissions,
      addresses: reach.addresses,
      viewerAddresses: reach.viewerAddresses,
      viewerDomains: reach.viewerDomains,
    }),
  };
  return { credential, refusal: null, rateLimit };
}

/**
 * The credential resolver and the rate-limit count, together, in one round trip
 * (projections/api-keys/admission.ts). A token's prefix says its kind: OAuth access tokens
 * (`wmo_at_`) take a branch of their own with the same Credential result.
 * `needed` false: the credential is not looked at, the request is only counted.
 */
async function admit(
  { pool, rateLimiter, keyAdmissions }: AuthDeps,
  request: { authorization: string | undefined; needed: boolean; ip: string },
): Promise<Admitted> {
  const token = request.needed ? bearerToken(request.authorization) : null;
  if (typeof token === 'string') return admitAccessToken(pool, rateLimiter, token, request.ip);
  const key = token instanceof ApiError ? null : token;
  const window = rateLimiter.window();
  const row = await keyAdmissions.admit({
    key: key && { id: key.keyId, secretHash: hashSecret(key.secret), mode: key.mode },
    now: new Date(window.now),
    fallbackIdentity: `ip:${request.ip}`,
    windowStart: window.start,
  });
  const rateLimit = rateLimitState(row.count, window);
  if (token instanceof ApiError) return { credential: null, refusal: token, rateLimit };
  if (key === null) return { credential: null, refusal: null, rateLimit };
  if (row.id === null)
    return { credential: null, refusal: new ApiError('invalid_api_key', 'This is not a valid API key.'), rateLimit };
  if (row.refusal) return { credential: null, refusal: new ApiError(row.refusal, REFUSALS[row.refusal]), rateLimit };
  const granted = row.scopes.filter(isPermission);
  const ceiling = row.role_permissions === null ? null : new Set(row.role_permissions);
  const scopes: Permission[] = ceiling === null ? granted : granted.filter((s) => ceiling.has(s));
  const credential: Credential = {
    kind: 'apiKey',
    id: row.id,
    workspaceId: row.workspace_id,
    mode: row.mode,
    grantedScopes: granted,
    scopes,
    roleId: row.role_id,
    addressAllowlist: row.address_allowlist,
    domainAllowlist: row.domain_allowlist,
    holdsEveryPermission: row.role_permissions === null || holdsEvery(row.role_permissions),
  };
  return { credential, refusal: null, rateLimit };
}

/** Does a role hold every permission of the vocabulary? */
function holdsEvery(permissions: readonly string[]): boolean {
  const held = new Set(permissions);
  return PERMISSIONS.every((p) => held.has(p));
}

/** An API key's parts, an OAuth access token whole (by its prefix), or why neither. */
function bearerToken(
  authorization: string | undefined,
): { mode: 'live' | 'test'; keyId: string; secret: string } | string | ApiError {
  if (!authorization) return new ApiError('missing_api_key', 'Send a key as `Authorization: Bearer <key>`.');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) return new ApiError('missing_api_key', 'The credential goes in `Authorization: Bearer <key>`.');
  if (match[1]!.startsWith(ACCESS_TOKEN_PREFIX)) return match[1]!;
  return parseToken(match[1]!) ?? new ApiError('invalid_api_key', 'This is not a valid API key.');
}

export type AuthDeps = {
  pool: pg.Pool;
  rateLimiter: RateLimiter;
  keyAdmissions: KeyAdmissions;
  requestLog: RequestLog;
};

/**
 * What a request does with the credential it carries. `required`: a route that needs one, refused
 * without it. `optional`: no route matched, so the answer is an error whatever the credential; a
 * valid key still counts the request under itself and logs it (the limit covers every request a
 * key makes), and anything else is counted by address without turning the 404 into a 401. `none`:
 * a route that takes no credential, counted by address.
 */
type CredentialUse = 'required' | 'optional' | 'none';

/**
 * Resolves the credential, counts the request and puts the RateLimit headers on its answer;
 * throws the 429, and the credential's refusal when the route requires one.
 */
export async function admitRequest(
  deps: AuthDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  use: CredentialUse,
): Promise<void> {
  const { credential, refusal, rateLimit } = await admit(deps, {
    authorization: request.headers.authorization,
    needed: use !== 'none',
    ip: request.ip,
  });
  request.credential = credential;
  reply.headers(rateLimitHeaders(rateLimit));
  if (rateLimit.exceeded) throw rateLimited(rateLimit);
  if (refusal && use === 'required') throw refusal;
}

/** Puts an answered request in its key's log; requests without a key are not logged. */
export function recordRequest(
  requestLog: RequestLog,
  request: FastifyRequest,
  reply: FastifyReply,
  durationMs: number,
): void {
  const c = request.credential;
  if (c?.kind !== 'apiKey' || c.id === null) return;
  requestLog.record({
    workspace_id: c.workspaceId,
    key_id: c.id,
    request_id: request.id,
    method: request.method,
    path: storableText(request.url.split('?')[0]!),
    status: reply.statusCode,
    error_code: request.errorCode,
    duration_ms: durationMs,
    ip: request.ip,
    // A refused request is logged too: one unstorable User-Agent would fail the whole batch insert.
    user_agent: request.headers['user-agent'] === undefined ? null : storableText(request.headers['user-agent']),
    created_at: new Date(),
  });
}

/**
 * On every request, in one round trip: resolve the credential, count the request against the rate
 * limit (by credential, or by client IP when there is none) and put the RateLimit headers on the
 * answer, whatever it turns out to be. The key's request log is written after the answer has
 * gone, in batches (api/request-log.ts).
 */
export function registerAuth(app: FastifyInstance, deps: AuthDeps): void {
  app.decorateRequest('credential', null);
  app.decorateRequest('errorCode', null);
  app.addHook('onRequest', async (request, reply) => {
    const use: CredentialUse =
      request.routeOptions.config?.auth === true ? 'required' : request.is404 ? 'optional' : 'none';
    await admitRequest(deps, request, reply, use);
  });
  app.addHook('onResponse', async (request, reply) =>
    recordRequest(deps.requestLog, request, reply, reply.elapsedTime),
  );
}
