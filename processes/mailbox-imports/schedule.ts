import { sql } from 'kysely';
import { emptyProgress } from '../../domain/mailbox-imports/events.ts';
import { defineReactor } from '../../projections/projector.ts';
import type { MailboxImportWorkTables } from './tables.ts';

/**
 * The scheduling half of mailbox imports: a created import gets a run row, queued makes it due at
 * once, a cancel ends it. From there the worker (worker.ts) reads the files batch by batch. Never
 * rebuilt: the tables are the state of work done (a replay would import again).
 */
export const mailboxImportSchedule = defineReactor<MailboxImportWorkTables>()({
  name: 'mailbox_import_schedule',
  version: 1,
  tables: ['mailbox_import_runs', 'mailbox_import_keys'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.mailbox_import_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      mailbox jsonb NOT NULL,
      files jsonb NOT NULL,
      chunk_bytes bigint NOT NULL,
      options jsonb NOT NULL,
      formats text[] NOT NULL DEFAULT '{}',
      status text NOT NULL,
      file integer NOT NULL DEFAULT 0,
      at_byte bigint NOT NULL DEFAULT 0,
      ordinal integer NOT NULL DEFAULT 0,
      progress jsonb NOT NULL,
      labels_skipped text[] NOT NULL DEFAULT '{}',
      entry integer[] NOT NULL DEFAULT '{}',
      due_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS mailbox_import_runs_due ON ${s}.mailbox_import_runs (due_at)
      WHERE status IN ('queued', 'running');
    ALTER TABLE ${s}.mailbox_import_runs ADD COLUMN IF NOT EXISTS entry integer[] NOT NULL DEFAULT '{}';
    CREATE TABLE IF NOT EXISTS ${s}.mailbox_import_keys (
      workspace_id text NOT NULL,
      address text NOT NULL,
      key text NOT NULL,
      import_id text NOT NULL,
      ordinal integer NOT NULL,
      PRIMARY KEY (workspace_id, address, key)
    );
    ALTER TABLE ${s}.mailbox_import_keys DROP COLUMN IF EXISTS thread_id;`,
  reactsTo: ['MailboxImportCreated', 'MailboxImportQueued', 'MailboxImportCancelled'],
  react: async (db, events) => {
    for (const event of events) {
      if (event.type === 'MailboxImportCreated') {
        const d = event.data;
        await db
          .insertInto('mailbox_import_runs')
          .values({
            id: d.importId,
            workspace_id: event.metadata.workspaceId,
            mailbox: JSON.stringify(d.mailbox),
            files: JSON.stringify(d.files),
            chunk_bytes: String(d.chunkBytes),
            options: JSON.stringify(d.options),
            formats: [],
            status: 'uploading',
            progress: JSON.stringify(emptyProgress()),
            due_at: d.createdAt,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      } else if (event.type === 'MailboxImportQueued') {
        await db
          .updateTable('mailbox_import_runs')
          .set({ status: 'queued', formats: event.data.formats, due_at: event.data.queuedAt })
          .where('id', '=', event.data.importId)
          .where('status', '=', 'uploading')
          .execute();
      } else {
        await db
          .updateTable('mailbox_import_runs')
          .set({ status: 'done' })
          .where('id', '=', event.data.importId)
          .execute();
        // Keys claimed by messages prepared ahead of a step's end and never filed (worker.ts
        // `releaseClaims`; a running step frees its own when it sees the cancel).
        await sql`DELETE FROM mailbox_import_keys k USING mailbox_import_runs r
          WHERE r.id = ${event.data.importId} AND k.workspace_id = r.workspace_id
            AND k.address = r.mailbox->>'address' AND k.import_id = r.id AND k.ordinal > r.ordinal`.execute(db);
      }
    }
  },
});
