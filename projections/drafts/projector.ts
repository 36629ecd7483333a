import type { Kysely } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { DraftsTables } from './tables.ts';

/** Drafts being written; a sent or deleted one leaves the list (its email is in the emails read model). */
export const draftsProjector = defineProjector<DraftsTables>()({
  name: 'drafts',
  version: 1,
  tables: ['drafts'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.drafts (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      address text NOT NULL,
      domain text NOT NULL,
      content jsonb NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS drafts_list ON ${s}.drafts (workspace_id, created_at DESC, id DESC);`,
  on: {
    DraftCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('drafts')
        .values({
          workspace_id: workspaceId,
          id: d.draftId,
          address: d.content.address,
          domain: d.content.domain,
          content: JSON.stringify(d.content),
          created_at: d.at,
          updated_at: d.at,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    DraftUpdated: async (db, { data: d }) => {
      await db
        .updateTable('drafts')
        .set({
          address: d.content.address,
          domain: d.content.domain,
          content: JSON.stringify(d.content),
          updated_at: d.at,
        })
        .where('id', '=', d.draftId)
        .execute();
    },
    DraftDeleted: (db, { data: d }) => remove(db, d.draftId),
    DraftSent: (db, { data: d }) => remove(db, d.draftId),
  },
});

async function remove(db: Kysely<DraftsTables>, draftId: string): Promise<void> {
  await db.deleteFrom('drafts').where('id', '=', draftId).execute();
}
