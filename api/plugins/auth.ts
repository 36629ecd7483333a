import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { parseToken, secretMatches } from '../../commands/api-keys/token.ts';
import { isPermission, type Permission } from '../../domain/shared/permissions.ts';
import { findKeyForAuth } from '../../projections/api-keys/queries.ts';
import type { Credential } from '../credential.ts';
import { ApiError } from '../errors/api-error.ts';
import { RequestLog } from '../request-log.ts';
import { rateLimited, rateLimitHeaders, type RateLimiter } from './rate-limit.ts';

declare module 'fastify' {
  interface FastifyRequest {
    errorCode: string | null;
  }
}

/**
 * The credential resolver. A token's prefix says its kind; API keys are resolved here, and OAuth
 * access tokens will get a branch of their own with the same Credential result.
 */
export async function resolveCredential(db: Kysely<any>, authorization: string | undefined, now: Date): Promise<Credential> {
  if (!authorization) throw new ApiError('missing_api_key', 'Send a key as `Authorization: Bearer <key>`.');
  const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
  if (!match) throw new ApiError('missing_api_key', 'The credential goes in `Authorization: Bearer <key>`.');
  const token = parseToken(match[1]!);
  if (!token) throw new ApiError('invalid_api_key', 'This is not a valid API key.');
  const key = await findKeyForAuth(db, token.keyId);
  if (!key || key.mode !== token.mode || !secretMatches(token.secret, key.secret_hash)) {
    throw new ApiError('invalid_api_key', 'This is not a valid API key.');
  }
  if (key.revoked_at) throw new ApiError('revoked_api_key', 'This API key was revoked.');
  if (key.expires_at && key.expires_at <= now) throw new ApiError('expired_api_key', 'This API key has expired.');
  const granted = key.scopes.filter(isPermission);
  const ceiling = key.role_permissions === null ? null : new Set(key.role_permissions);
  const scopes: Permission[] = ceiling === null ? granted : granted.filter((s) => ceiling.has(s));
  return {
    kind: 'apiKey',
    id: key.id,
    workspaceId: key.workspace_id,
    mode: key.mode,
    grantedScopes: granted,
    scopes,
    roleId: key.role_id,
    addressAllowlist: key.address_allowlist,
    domainAllowlist: key.domain_allowlist,
  };
}

/**
 * On every request: resolve the credential (routes that need one), count it against the rate
 * limit (by credential, or by client IP when there is none) and put the RateLimit headers on the
 * answer, whatever it turns out to be.
 */
export function registerAuth(app: FastifyInstance, deps: { db: Kysely<any>; rateLimiter: RateLimiter; requestLog: RequestLog }): void {
  app.decorateRequest('credential', null);
  app.decorateRequest('errorCode', null);
  app.addHook('onRequest', async (request, reply) => {
    let authError: unknown = null;
    if (request.routeOptions.config?.auth === true) {
      try {
        request.credential = await resolveCredential(deps.db, request.headers.authorization, new Date());
      } catch (error) {
        authError = error;
      }
    }
    const identity = request.credential ? `key:${request.credential.id}` : `ip:${request.ip}`;
    const state = await deps.rateLimiter.hit(identity);
    reply.headers(rateLimitHeaders(state));
    if (state.exceeded) throw rateLimited(state);
    if (authError) throw authError;
  });
  app.addHook('onResponse', async (request, reply) => {
    const c = request.credential;
    if (c?.kind !== 'apiKey' || c.id === null) return;
    deps.requestLog.record({
      workspace_id: c.workspaceId,
      key_id: c.id,
      request_id: request.id,
      method: request.method,
      path: request.url.split('?')[0]!,
      status: reply.statusCode,
      error_code: request.errorCode,
      duration_ms: reply.elapsedTime,
      ip: request.ip,
      user_agent: request.headers['user-agent'] ?? null,
      created_at: new Date(),
    });
  });
}
