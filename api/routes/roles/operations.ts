import { z } from 'zod';
import { createRole, deleteRole, ensureSeeded, updateRole } from '../../../commands/roles/handlers.ts';
import { PERMISSIONS_MAX } from '../../../domain/roles/decide.ts';
import { PERMISSION_ENTRIES, PERMISSIONS, type Permission } from '../../../domain/shared/permissions.ts';
import {
  findRole,
  hasOwnerRole,
  listRoles,
  roleCursorOf,
  type RoleCursor,
} from '../../../projections/roles/queries.ts';
import { countInvitationsWithRole } from '../../../projections/members/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { readRole, roleCounts, roleView, viewRole } from './views.ts';

const permission = z.enum(PERMISSIONS as [Permission, ...Permission[]], {
  error: 'is not a permission (see GET /roles/permissions)',
});
const permissions = z.array(permission).max(PERMISSIONS_MAX);
const name = z.string().describe('Trimmed, 1 to 48 characters, unique in the workspace ignoring case.');
const description = z.string().describe('Up to 240 characters; blank is stored as null.');

const roleIdParams = z.object({ id: z.string() });

export const roleOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/roles',
    operationId: 'listRoles',
    summary: 'List roles',
    description:
      'Scope: `roles:read`. Seeded roles first in ladder order (owner, admin, member, viewer, developer, billing), then custom roles ' +
      'by name ignoring case. The first read seeds the six roles; later reads restore only the owner role.',
    scope: 'roles:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(roleView),
    handler: async ({ credential, query, request }) => {
      const workspaceId = credential.workspaceId;
      return deps.cursors.list(workspaceId, query, {
        name: 'roles',
        rows: async (after: RoleCursor | null, limit) => {
          if (!(await hasOwnerRole(deps.db, workspaceId))) {
            await ensureSeeded(deps.commands, actorOf(credential, request.id), new Date().toISOString());
          }
          const [rows, counts] = await Promise.all([
            listRoles(deps.db, workspaceId, limit, after),
            roleCounts(deps.db, workspaceId),
          ]);
          return rows.map((row) => ({ row, counts: counts(row) }));
        },
        key: ({ row }) => roleCursorOf(row),
        view: ({ row, counts }) => viewRole(row, counts),
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/roles/permissions',
    operationId: 'listPermissions',
    summary: 'The permission vocabulary',
    description:
      'Scope: `roles:read`. Canonical order; `scope` false marks the console-only permissions no key or token can hold.',
    scope: 'roles:read',
    response: z.array(z.object({ permission: z.string(), label: z.string(), group: z.string(), scope: z.boolean() })),
    handler: async () => PERMISSION_ENTRIES,
  }),

  operation({
    method: 'GET',
    url: '/roles/:id',
    operationId: 'getRole',
    errors: ['role_not_found'],
    summary: 'Read a role',
    scope: 'roles:read',
    params: roleIdParams,
    response: roleView,
    handler: async ({ credential, params }) => readRole(deps.db, credential.workspaceId, params.id),
  }),

  operation({
    method: 'POST',
    url: '/roles',
    operationId: 'createRole',
    errors: ['role_name_taken', 'insufficient_authority', 'workspace_limit_reached'],
    summary: 'Create a role',
    description:
      'Scope: `roles:write`. Permissions are stored with their implications, in canonical order; the caller must hold every ' +
      'permission it grants. At most 24 custom roles.',
    scope: 'roles:write',
    body: z.strictObject({ name, permissions, description: description.nullable().optional() }),
    status: 201,
    response: roleView,
    handler: async ({ credential, body, request }) => {
      const roleId = await createRole(
        deps.commands,
        actorOf(credential, request.id),
        { scopes: credential.scopes },
        { name: body.name, description: body.description ?? null, permissions: body.permissions },
        new Date().toISOString(),
      );
      return readRole(deps.db, credential.workspaceId, roleId);
    },
  }),

  operation({
    method: 'PATCH',
    url: '/roles/:id',
    operationId: 'updateRole',
    errors: ['role_not_found', 'role_name_taken', 'role_immutable', 'insufficient_authority'],
    stepUp: true,
    summary: 'Update a role',
    description:
      'Scope: `roles:write`. `permissions` replaces the whole list; the caller must hold every permission it adds. ' +
      '`description` null clears it. The owner role cannot be edited.',
    scope: 'roles:write',
    params: roleIdParams,
    body: z.strictObject({
      name: name.optional(),
      description: description.nullable().optional(),
      permissions: permissions.optional(),
    }),
    response: roleView,
    handler: async ({ credential, params, body, request }) => {
      await updateRole(deps.commands, actorOf(credential, request.id), {
        roleId: params.id,
        ...body,
        now: new Date().toISOString(),
        caller: { scopes: credential.scopes },
      });
      return readRole(deps.db, credential.workspaceId, params.id);
    },
  }),

  operation({
    method: 'DELETE',
    url: '/roles/:id',
    operationId: 'deleteRole',
    errors: ['role_not_found', 'role_in_use', 'role_undeletable', 'insufficient_authority'],
    stepUp: true,
    summary: 'Delete a role',
    description:
      'Scope: `roles:write`. While members, keys or pending invitations hold the role, `reassignTo` names the role receiving them. ' +
      'The owner role cannot be deleted.',
    scope: 'roles:write',
    params: roleIdParams,
    query: z.strictObject({ reassignTo: z.string().min(1).optional() }),
    response: z.object({
      object: z.literal('role'),
      id: z.string(),
      deleted: z.literal(true),
      reassigned: z.number().int(),
      keysReassigned: z.number().int(),
    }),
    handler: async ({ credential, params, query, request }) => {
      const row = await findRole(deps.db, credential.workspaceId, params.id);
      const holders = row ? (await roleCounts(deps.db, credential.workspaceId))(row) : { members: 0, apiKeys: 0 };
      const invitations = row ? await countInvitationsWithRole(deps.db, credential.workspaceId, row.id) : 0;
      const { keysReassigned } = await deleteRole(deps.commands, actorOf(credential, request.id), {
        roleId: params.id,
        reassignTo: query.reassignTo ?? null,
        holders: { members: holders.members + invitations, keys: holders.apiKeys },
        now: new Date().toISOString(),
        caller: { scopes: credential.scopes },
      });
      return {
        object: 'role' as const,
        id: params.id,
        deleted: true as const,
        reassigned: holders.members,
        keysReassigned,
      };
    },
  }),
];
