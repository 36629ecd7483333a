import type { Kysely, Selectable } from 'kysely';
import type { RolesTables } from './tables.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

export type RoleRow = Selectable<RolesTables['roles']>;

/** The list's sort key: seeded roles in ladder order, then custom roles by name ignoring case, then id. */
export type RoleCursor = [number, string, string];

export const roleCursorOf = (r: RoleRow): RoleCursor => [r.rank, r.name_lower, r.id];

export async function findRole(db: Db, workspaceId: string, roleId: string): Promise<RoleRow | undefined> {
  return db
    .selectFrom('roles')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', roleId)
    .executeTakeFirst();
}

/** Whether the list can skip seeding: rows exist only once seeded, and the owner role is there. */
export async function hasOwnerRole(db: Db, workspaceId: string): Promise<boolean> {
  const row = await db
    .selectFrom('roles')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('builtin', '=', 'owner')
    .executeTakeFirst();
  return row !== undefined;
}

export async function listRoles(
  db: Db,
  workspaceId: string,
  limit: number,
  after: RoleCursor | null,
): Promise<RoleRow[]> {
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
  return q
    .orderBy('rank')
    .orderBy('name_lower')
    .orderBy('id')
    .limit(limit + 1)
    .execute();
}
