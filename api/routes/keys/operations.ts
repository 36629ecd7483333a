import { z } from 'zod';
import { createApiKey, revokeApiKey } from '../../../commands/api-keys/handlers.ts';
import type { CallerAuthority } from '../../../domain/api-keys/decide.ts';
import { PERMISSIONS, type Permission } from '../../../domain/shared/permissions.ts';
import { findActiveKey, listKeys } from '../../../projections/api-keys/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { addressAllowlist, dateTime, domainAllowlist } from '../../schemas.ts';
import { roleOr404 } from '../roles/views.ts';
import { apiKeyView, keyOr404, viewApiKey } from './views.ts';

const createKeyBody = z.strictObject({
  name: z.string().trim().min(1).max(100).nullable().optional(),
  scopes: z.array(z.enum(PERMISSIONS as [Permission, ...Permission[]])).max(PERMISSIONS.length),
  roleId: z.string().nullable().optional(),
  mode: z.enum(['live', 'test']).optional(),
  addressAllowlist,
  domainAllowlist,
  expiresAt: dateTime.nullable().optional(),
});

const keyIdParams = z.object({ id: z.string() });

const authorityOf = (c: Credential): CallerAuthority => ({
  keyId: c.id,
  mode: c.mode,
  scopes: c.scopes,
  addressAllowlist: c.addressAllowlist,
  domainAllowlist: c.domainAllowlist,
});

export const keyOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/keys',
    operationId: 'listApiKeys',
    summary: 'List API keys',
    scope: 'keys:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(apiKeyView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'keys',
        rows: (after, limit) => listKeys(deps.db, credential.workspaceId, limit, after),
        key: createdKey,
        view: viewApiKey,
      }),
  }),

  operation({
    method: 'GET',
    url: '/keys/:id',
    operationId: 'getApiKey',
    errors: ['resource_not_found'],
    summary: 'Read an API key',
    scope: 'keys:read',
    params: keyIdParams,
    response: apiKeyView,
    handler: async ({ credential, params }) => viewApiKey(await keyOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'POST',
    url: '/keys',
    operationId: 'createApiKey',
    errors: ['role_not_found', 'beyond_caller_authority', 'workspace_limit_reached'],
    summary: 'Create an API key',
    openToTestKeys: true,
    description:
      'Scope: `keys:manage`. Never wider than the calling key: scopes it holds, allowlists inside its own, a test key makes test keys. ' +
      'An address on an allowlisted domain is dropped. The token is shown only in this answer. At most 20 active keys.',
    scope: 'keys:manage',
    body: createKeyBody,
    status: 201,
    response: apiKeyView.extend({ token: z.string() }),
    handler: async ({ credential, body, request }) => {
      const roleId = body.roleId ?? null;
      if (roleId !== null) await roleOr404(deps.db, credential.workspaceId, roleId);
      const { keyId, token } = await createApiKey(
        deps.commands,
        actorOf(credential, request.id),
        authorityOf(credential),
        {
          name: body.name ?? null,
          mode: body.mode ?? credential.mode,
          scopes: body.scopes,
          roleId,
          addressAllowlist: body.addressAllowlist ?? null,
          domainAllowlist: body.domainAllowlist ?? null,
          expiresAt: body.expiresAt ? new Date(body.expiresAt).toISOString() : null,
        },
        new Date().toISOString(),
      );
      const row = await findActiveKey(deps.db, credential.workspaceId, keyId);
      return { ...viewApiKey(row!), token };
    },
  }),

  operation({
    method: 'DELETE',
    url: '/keys/:id',
    operationId: 'revokeApiKey',
    errors: ['resource_not_found', 'beyond_caller_authority'],
    summary: 'Revoke an API key',
    openToTestKeys: true,
    description:
      'Scope: `keys:manage`. The key stops working at once. A key revokes itself, or keys inside its own authority (scopes it holds, ' +
      'allowlists inside its own; a test key only test keys): 403 `beyond_caller_authority` otherwise.',
    scope: 'keys:manage',
    params: keyIdParams,
    response: z.object({ object: z.literal('api_key'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      await revokeApiKey(
        deps.commands,
        actorOf(credential, request.id),
        authorityOf(credential),
        params.id,
        new Date().toISOString(),
      );
      return { object: 'api_key' as const, id: params.id, deleted: true as const };
    },
  }),
];
