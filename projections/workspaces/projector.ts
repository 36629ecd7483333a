import type { Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { WorkspacesTables } from './tables.ts';

type Db = Kysely<WorkspacesTables>;

/**
 * Workspaces and the people in them. Until members can be invited, the owner is the only member;
 * the owner holds the owner role implicitly (`role_id` null, `is_owner` true).
 */
export const workspacesProjector = defineProjector<WorkspacesTables>()({
  name: 'workspaces',
  version: 1,
  tables: ['workspaces', 'members'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.workspaces (
      id text PRIMARY KEY,
      name text NOT NULL,
      owner_user_id text NOT NULL,
      owner_email text NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.members (
      workspace_id text NOT NULL,
      user_id text NOT NULL,
      email text NOT NULL,
      is_owner boolean NOT NULL,
      role_id text,
      created_at timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, user_id)
    );`,
  on: { WorkspaceCreated: createWorkspace, RoleDeleted: reassignMembers },
});

async function createWorkspace(db: Db, { data: d }: Projected<'WorkspaceCreated'>): Promise<void> {
  await db
    .insertInto('workspaces')
    .values({
      id: d.workspaceId,
      name: d.name,
      owner_user_id: d.ownerUserId,
      owner_email: d.ownerEmail,
      created_at: d.createdAt,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
  await db
    .insertInto('members')
    .values({
      workspace_id: d.workspaceId,
      user_id: d.ownerUserId,
      email: d.ownerEmail,
      is_owner: true,
      role_id: null,
      created_at: d.createdAt,
    })
    .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
    .execute();
}

/** Members of a deleted role move to the role named by `reassignTo` (required while any hold it). */
async function reassignMembers(
  db: Db,
  { metadata: { workspaceId }, data: d }: Projected<'RoleDeleted'>,
): Promise<void> {
  if (d.reassignTo === null) return;
  await db
    .updateTable('members')
    .set({ role_id: d.reassignTo })
    .where('workspace_id', '=', workspaceId)
    .where('role_id', '=', d.roleId)
    .execute();
}
