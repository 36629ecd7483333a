import type { Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { WorkspacesTables } from './tables.ts';

type Db = Kysely<WorkspacesTables>;

/** Workspaces and their owners; the people in them are the members read model's (projections/members). */
export const workspacesProjector = defineProjector<WorkspacesTables>()({
  name: 'workspaces',
  version: 2,
  tables: ['workspaces'],
  // Version 1 kept the owner in a members table; the members read model holds people now.
  ddl: (s) => `
    DROP TABLE IF EXISTS ${s}.members;
    CREATE TABLE IF NOT EXISTS ${s}.workspaces (
      id text PRIMARY KEY,
      name text NOT NULL,
      owner_user_id text NOT NULL,
      owner_email text NOT NULL,
      created_at timestamptz NOT NULL
    );`,
  on: { WorkspaceCreated: createWorkspace },
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
}
