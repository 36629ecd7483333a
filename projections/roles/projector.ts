import type { Kysely } from 'kysely';
import { rankOf, type Builtin } from '../../domain/roles/seeds.ts';
import { defineProjector, type Projected } from '../projector.ts';
import type { RolesTables } from './tables.ts';

type Db = Kysely<RolesTables>;

interface RoleData {
  roleId: string;
  name: string;
  description: string | null;
  permissions: string[];
}

/**
 * The roles of every workspace. api/plugins/auth.ts joins this table on every request to bound a
 * key by its role, so a deleted role's row goes away: a key left on it resolves to no permissions.
 */
export const rolesProjector = defineProjector<RolesTables>()({
  name: 'roles',
  version: 1,
  tables: ['roles'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.roles (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      name text NOT NULL,
      name_lower text NOT NULL,
      description text,
      permissions text[] NOT NULL,
      builtin text,
      rank integer NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS roles_workspace_order ON ${s}.roles (workspace_id, rank, name_lower, id);`,
  on: {
    RolesSeeded: async (db, { metadata: { workspaceId }, data: d }) => {
      for (const r of d.roles) await insertRole(db, workspaceId, r, r.builtin, d.seededAt);
    },
    OwnerRoleRestored: (db, { metadata: { workspaceId }, data: d }) =>
      insertRole(db, workspaceId, d.role, d.role.builtin, d.restoredAt),
    RoleCreated: (db, { metadata: { workspaceId }, data: d }) => insertRole(db, workspaceId, d, null, d.createdAt),
    RoleUpdated: updateRole,
    RoleDeleted: async (db, { metadata: { workspaceId }, data: d }) => {
      await db.deleteFrom('roles').where('workspace_id', '=', workspaceId).where('id', '=', d.roleId).execute();
    },
  },
});

async function insertRole(
  db: Db,
  workspaceId: string,
  r: RoleData,
  builtin: Builtin | null,
  at: string,
): Promise<void> {
  await db
    .insertInto('roles')
    .values({
      id: r.roleId,
      workspace_id: workspaceId,
      name: r.name,
      name_lower: r.name.toLowerCase(),
      description: r.description,
      permissions: r.permissions,
      builtin,
      rank: rankOf(builtin),
      created_at: at,
      updated_at: at,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

async function updateRole(db: Db, { metadata: { workspaceId }, data: d }: Projected<'RoleUpdated'>): Promise<void> {
  await db
    .updateTable('roles')
    .set({
      name: d.name,
      name_lower: d.name.toLowerCase(),
      description: d.description,
      permissions: d.permissions,
      updated_at: d.updatedAt,
    })
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', d.roleId)
    .execute();
}
