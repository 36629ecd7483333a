import type { Kysely } from 'kysely';
import type { ReadModels } from '../../../projections/tables.ts';
import { z } from 'zod';
import { BUILTINS } from '../../../domain/roles/seeds.ts';
import { countKeysByRole } from '../../../projections/api-keys/queries.ts';
import { findRole, type RoleRow } from '../../../projections/roles/queries.ts';
import { countMembersByRole } from '../../../projections/members/queries.ts';
import { lookup } from '../../lookups.ts';

export const roleView = z.object({
  object: z.literal('role'),
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  permissions: z.array(z.string()),
  builtin: z.enum(BUILTINS).nullable(),
  editable: z.boolean(),
  deletable: z.boolean(),
  members: z.number().int(),
  apiKeys: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const roleOr404 = lookup(findRole, {
  code: 'role_not_found',
  message: 'No such role in this workspace.',
  param: 'roleId',
});

/** Counts computed at read: explicit memberships (the owner under the owner role) and unrevoked keys. */
export async function roleCounts(db: Kysely<ReadModels>, workspaceId: string) {
  const [members, keys] = await Promise.all([countMembersByRole(db, workspaceId), countKeysByRole(db, workspaceId)]);
  return (r: RoleRow) => ({
    members: (members.byRole.get(r.id) ?? 0) + (r.builtin === 'owner' ? members.owners : 0),
    apiKeys: keys.get(r.id) ?? 0,
  });
}

export function viewRole(r: RoleRow, counts: { members: number; apiKeys: number }): z.infer<typeof roleView> {
  const owner = r.builtin === 'owner';
  return {
    object: 'role',
    id: r.id,
    name: r.name,
    description: r.description,
    permissions: r.permissions,
    builtin: r.builtin,
    editable: !owner,
    deletable: !owner,
    ...counts,
    createdAt: r.created_at.toISOString(),
    updatedAt: r.updated_at.toISOString(),
  };
}

/** A role as it now stands, with its counts. */
export async function readRole(
  db: Kysely<ReadModels>,
  workspaceId: string,
  roleId: string,
): Promise<z.infer<typeof roleView>> {
  const row = await roleOr404(db, workspaceId, roleId);
  return viewRole(row, (await roleCounts(db, workspaceId))(row));
}
