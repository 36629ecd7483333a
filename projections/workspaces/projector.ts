import type { Projector } from '../projector.ts';

/**
 * Workspaces and the people in them. Until members can be invited, the owner is the only member;
 * the owner holds the owner role implicitly (`role_id` null, `is_owner` true).
 */
export const workspacesProjector: Projector = {
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
  handles: ['WorkspaceCreated', 'RoleDeleted'],
  async apply(db, event) {
    if (event.type === 'RoleDeleted') {
      // Members of a deleted role move to the role named by `reassignTo` (required while any hold it).
      const r = event.data as { roleId: string; reassignTo: string | null };
      if (r.reassignTo === null) return;
      await db
        .updateTable('members')
        .set({ role_id: r.reassignTo })
        .where('workspace_id', '=', event.metadata.workspaceId as string)
        .where('role_id', '=', r.roleId)
        .execute();
      return;
    }
    const d = event.data as { workspaceId: string; name: string; ownerUserId: string; ownerEmail: string; createdAt: string };
    await db
      .insertInto('workspaces')
      .values({ id: d.workspaceId, name: d.name, owner_user_id: d.ownerUserId, owner_email: d.ownerEmail, created_at: d.createdAt })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    await db
      .insertInto('members')
      .values({ workspace_id: d.workspaceId, user_id: d.ownerUserId, email: d.ownerEmail, is_owner: true, role_id: null, created_at: d.createdAt })
      .onConflict((oc) => oc.columns(['workspace_id', 'user_id']).doNothing())
      .execute();
  },
};
