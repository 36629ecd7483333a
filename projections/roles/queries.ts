import type { Kysely } from 'kysely';
import type { Builtin } from '../../domain/roles/seeds.ts';

export interface RoleRow {
  id: string;
  workspace_id: string;
  name: string;
  name_lower: string;
  description: string | null;
  permissions: string[];
  builtin: Builtin | null;
  rank: number;
  created_at: Date;
  updated_at: Date;
}

/** The list's sort key: seeded roles in ladder order, then custom roles by name ignoring case, then id. */
export type RoleCursor = [number, string, string];

export const roleCursorOf = (r: RoleRow): RoleCursor => [r.rank, r.name_lower, r.id];

export async function findRole(db: Kysely<any>, workspaceId: string, roleId: string): Promise<RoleRow | undefined> {
  return (await db.selectFrom('roles').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', roleId).executeTakeFirst()) as
    | RoleRow
    | undefined;
}

/** Whether the list can skip seeding: rows exist only once seeded, and the owner role is there. */
export async function hasOwnerRole(db: Kysely<any>, workspaceId: string): Promise<boolean> {
  const row = await db.selectFrom('roles').select('id').where('workspace_id', '=', workspaceId).where('builtin', '=', 'owner').executeTakeFirst();
  return row !== undefined;
}

export async function listRoles(db: Kysely<any>, workspaceId: string, limit: number, after: RoleCursor | null): Promise<RoleRow[]> {
  let q = db.selectFrom('roles').selectAll().where('workspace_id', '=', workspaceId);
  if (after) {
    const [rank, nameLower, id] = after;
    q = q.where((eb) =>
      eb.or([
        eb('rank', '>', rank),
        eb.and([eb('rank', '=', rank), eb('name_lower', '>', nameLower)]),
        eb.and([eb('rank', '=', rank), eb('name_lower', '=', nameLower), eb('id', '>', id)]),
      ]),
    );
  }
  return (await q.orderBy('rank').orderBy('name_lower').orderBy('id').limit(limit + 1).execute()) as RoleRow[];
}
