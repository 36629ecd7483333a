import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { rotateApiKey } from '../../commands/api-keys/handlers.ts';
import { actorOf } from '../credential.ts';
import { ApiError } from '../errors/api-error.ts';
import { cursorParam, limitParam, pageSchema } from '../paging.ts';
import { booleanParam, listParam } from '../query.ts';
import { dateTime } from '../schemas.ts';
import { listRequests } from '../request-log.ts';
import { route } from '../route.ts';
import type { ApiDeps } from '../deps.ts';
import { credentialDescription, describeCredential } from './api-key-views.ts';

const tags = ['Credential self-description'];

const requestEntry = z.object({
  object: z.literal('api_request'),
  requestId: z.string(),
  method: z.string(),
  path: z.string(),
  status: z.number().int(),
  errorCode: z.string().nullable(),
  durationMs: z.number(),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
  createdAt: z.string(),
});

export function registerSelf(app: FastifyInstance, deps: ApiDeps): void {
  route(app, {
    method: 'GET',
    url: '/ping',
    summary: 'Check a credential',
    tags,
    scope: null,
    response: z.object({
      ok: z.literal(true),
      kind: z.enum(['apiKey', 'oauth']),
      keyId: z.string().nullable(),
      mode: z.enum(['live', 'test']),
      scopes: z.array(z.string()),
      grantedScopes: z.array(z.string()),
      roleId: z.string().nullable(),
      workspaceId: z.string(),
      clientId: z.string().optional(),
    }),
    handler: async ({ credential: c }) => ({
      ok: true,
      kind: c.kind,
      keyId: c.kind === 'apiKey' ? c.id : null,
      mode: c.mode,
      scopes: c.scopes,
      grantedScopes: c.grantedScopes,
      roleId: c.kind === 'apiKey' ? c.roleId : null,
      workspaceId: c.workspaceId,
      ...(c.kind === 'oauth' ? { clientId: c.clientId } : {}),
    }),
  });

  route(app, {
    method: 'GET',
    url: '/keys/self',
    summary: 'Describe the calling credential',
    tags,
    scope: null,
    response: credentialDescription,
    handler: async ({ credential }) => describeCredential(credential),
  });

  route(app, {
    method: 'POST',
    url: '/keys/self/rotate',
    summary: 'Rotate the calling key',
    openToTestKeys: true,
    description: 'Scope: `keys:write`. The old secret stops working at once. The new token is shown only in this answer.',
    tags,
    scope: 'keys:write',
    response: credentialDescription.extend({ token: z.string(), rotationCount: z.number().int(), rotatedAt: z.string() }),
    handler: async ({ credential, request }) => {
      if (credential.kind !== 'apiKey' || !credential.id) throw new ApiError('api_key_only', 'Only an API key can rotate itself.', null, 403);
      const rotated = await rotateApiKey(deps.commands, actorOf(credential, request.id), credential.id, credential.mode, new Date().toISOString());
      return { ...describeCredential(credential), ...rotated };
    },
  });

  route(app, {
    method: 'GET',
    url: '/keys/self/requests',
    summary: "The calling key's own request log",
    description: 'Needs no scope. Newest first. Records method, path, status, error code, duration, IP and user agent; never bodies or query strings.',
    tags,
    scope: null,
    response: pageSchema(requestEntry),
    query: z.strictObject({
      limit: limitParam(),
      cursor: cursorParam,
      failedOnly: booleanParam.optional(),
      statuses: listParam(z.string().regex(/^[1-5][0-9]{2}$/).transform(Number)).optional(),
      path: z.string().startsWith('/').max(2000).optional(),
      since: dateTime.optional(),
      until: dateTime.optional(),
    }),
    handler: async ({ credential, query }) => {
      if (credential.kind !== 'apiKey' || !credential.id) throw new ApiError('api_key_only', 'Only an API key has a request log.', null, 403);
      const keyId = credential.id;
      return deps.cursors.list(credential.workspaceId, query, {
        name: `requests:${keyId}`,
        rows: async (after: [string, number] | null, limit) => {
          await deps.requestLog.flush();
          return listRequests(deps.db, keyId, query, limit, after);
        },
        key: (r) => [r.created_at.toISOString(), r.id],
        view: (r) => ({
          object: 'api_request' as const,
          requestId: r.request_id,
          method: r.method,
          path: r.path,
          status: r.status,
          errorCode: r.error_code,
          durationMs: Math.round(r.duration_ms * 100) / 100,
          ip: r.ip,
          userAgent: r.user_agent,
          createdAt: r.created_at.toISOString(),
        }),
      });
    },
  });
}
