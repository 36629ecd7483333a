import { defineProjector } from '../projector.ts';
import type { UnsubscribesTables } from './tables.ts';

/** The unsubscribes that hold: the list the API pages newest first, and what the suppression step of a send reads. */
export const unsubscribesProjector = defineProjector<UnsubscribesTables>()({
  name: 'unsubscribes',
  version: 1,
  tables: ['unsubscribes'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.unsubscribes (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      email text NOT NULL,
      contact_id text,
      audience_id text,
      source text NOT NULL,
      created_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS unsubscribes_workspace_email ON ${s}.unsubscribes (workspace_id, email);
    CREATE INDEX IF NOT EXISTS unsubscribes_workspace_created ON ${s}.unsubscribes (workspace_id, created_at DESC, id DESC);`,
  on: {
    ContactUnsubscribed: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('unsubscribes')
        .values({
          workspace_id: workspaceId,
          id: d.unsubscribeId,
          email: d.email,
          contact_id: d.contactId,
          audience_id: d.audienceId,
          source: d.source,
          created_at: d.createdAt,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    UnsubscribeRemoved: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .deleteFrom('unsubscribes')
        .where('workspace_id', '=', workspaceId)
        .where('id', '=', d.unsubscribeId)
        .execute();
    },
  },
});
