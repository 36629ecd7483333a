import { z } from 'zod';
import { rotateApiKey } from '../../../commands/api-keys/handlers.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { booleanParam, listParam } from '../../query.ts';
import { listRequests } from '../../request-log.ts';
import { operation, type Operation } from '../../route.ts';
import { dateTime } from '../../schemas.ts';
import { credentialDescription, describeCredential } from '../keys/views.ts';
import { requestEntry, viewRequest } from './views.ts';

export const selfOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/ping',
    operationId: 'ping',
    summary: 'Check a credential',
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
  }),

  operation({
    method: 'GET',
    url: '/keys/self',
    operationId: 'getCurrentKey',
    summary: 'Describe the calling credential',
    scope: null,
    response: credentialDescription,
    handler: async ({ credential }) => describeCredential(credential),
  }),

  operation({
    method: 'POST',
    url: '/keys/self/rotate',
    operationId: 'rotateCurrentKey',
    errors: ['api_key_only', 'resource_not_found', 'revoked', 'expired'],
    summary: 'Rotate the calling key',
    openToTestKeys: true,
    description:
      'Scope: `keys:write`. The old secret stops working at once. The new token is shown only in this answer.',
    scope: 'keys:write',
    response: credentialDescription.extend({
      token: z.string(),
      rotationCount: z.number().int(),
      rotatedAt: z.string(),
    }),
    handler: async ({ credential, request }) => {
      if (credential.kind !== 'apiKey' || !credential.id)
        throw new ApiError('api_key_only', 'Only an API key can rotate itself.', null, 403);
      const rotated = await rotateApiKey(
        deps.commands,
        actorOf(credential, request.id),
        credential.id,
        credential.mode,
        new Date().toISOString(),
      );
      return { ...describeCredential(credential), ...rotated };
    },
  }),

  operation({
    method: 'GET',
    url: '/keys/self/requests',
    operationId: 'listCurrentKeyRequests',
    errors: ['api_key_only'],
    summary: "The calling key's own request log",
    description:
      'Needs no scope. Newest first. Records method, path, status, error code, duration, IP and user agent; never bodies or query strings.',
    scope: null,
    response: pageSchema(requestEntry),
    query: z.strictObject({
      limit: limitParam(),
      cursor: cursorParam,
      failedOnly: booleanParam.optional(),
      statuses: listParam(
        z
          .string()
          .regex(/^[1-5][0-9]{2}$/)
          .transform(Number),
      ).optional(),
      path: z.string().startsWith('/').max(2000).optional(),
      since: dateTime.optional(),
      until: dateTime.optional(),
    }),
    handler: async ({ credential, query }) => {
      if (credential.kind !== 'apiKey' || !credential.id)
        throw new ApiError('api_key_only', 'Only an API key has a request log.', null, 403);
      const keyId = credential.id;
      return deps.cursors.list(credential.workspaceId, query, {
        name: `requests:${keyId}`,
        rows: async (after: [string, number] | null, limit) => {
          await deps.requestLog.flush();
          return listRequests(deps.db, keyId, query, limit, after);
        },
        key: (r) => [r.created_at.toISOString(), r.id],
        view: viewRequest,
      });
    },
  }),
];
