import { emptyProgress } from '../../domain/mailbox-imports/events.ts';
import { defineProjector } from '../projector.ts';
import type { MailboxImportsTables } from './tables.ts';

/** Mailbox imports and their progress, as the api lists them (newest first). */
export const mailboxImportsProjector = defineProjector<MailboxImportsTables>()({
  name: 'mailbox_imports',
  version: 1,
  tables: ['mailbox_imports'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.mailbox_imports (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      address_id text,
      address text NOT NULL,
      domain text NOT NULL,
      status text NOT NULL,
      options jsonb NOT NULL,
      files jsonb NOT NULL,
      formats text[] NOT NULL DEFAULT '{}',
      chunk_bytes bigint NOT NULL,
      total_bytes bigint NOT NULL,
      progress jsonb NOT NULL,
      last_error text,
      upload_deleted boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS mailbox_imports_workspace_created ON ${s}.mailbox_imports (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS mailbox_imports_uploading ON ${s}.mailbox_imports (created_at, id) WHERE status = 'uploading';`,
  on: {
    MailboxImportCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('mailbox_imports')
        .values({
          workspace_id: workspaceId,
          id: d.importId,
          address_id: d.mailbox.addressId,
          address: d.mailbox.address,
          domain: d.mailbox.domain,
          status: 'uploading',
          options: JSON.stringify(d.options),
          files: JSON.stringify(d.files),
          formats: [],
          chunk_bytes: String(d.chunkBytes),
          total_bytes: String(d.files.reduce((sum, f) => sum + f.bytes, 0)),
          progress: JSON.stringify(emptyProgress()),
          last_error: null,
          upload_deleted: false,
          created_at: d.createdAt,
          started_at: null,
          finished_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    MailboxImportQueued: async (db, { data: d }) => {
      await db
        .updateTable('mailbox_imports')
        .set({ status: 'queued', formats: d.formats })
        .where('id', '=', d.importId)
        .where('status', '=', 'uploading')
        .execute();
    },
    MailboxImportStarted: async (db, { data: d }) => {
      await db
        .updateTable('mailbox_imports')
        .set({ status: 'running', started_at: d.startedAt })
        .where('id', '=', d.importId)
        .where('status', '=', 'queued')
        .execute();
    },
    MailboxImportProgressed: async (db, { data: d }) => {
      await db
        .updateTable('mailbox_imports')
        .set({ progress: JSON.stringify(d.progress) })
        .where('id', '=', d.importId)
        .execute();
    },
    MailboxImportCompleted: async (db, { data: d }) => {
      await db
        .updateTable('mailbox_imports')
        .set({ status: 'completed', progress: JSON.stringify(d.progress), finished_at: d.completedAt })
        .where('id', '=', d.importId)
        .execute();
    },
    MailboxImportFailed: async (db, { data: d }) => {
      await db
        .updateTable('mailbox_imports')
        .set({
          status: 'failed',
          progress: JSON.stringify(d.progress),
          last_error: d.error,
          finished_at: d.failedAt,
        })
        .where('id', '=', d.importId)
        .execute();
    },
    MailboxImportCancelled: async (db, { data: d }) => {
      await db
        .updateTable('mailbox_imports')
        .set({ status: 'cancelled', finished_at: d.cancelledAt, last_error: d.reason ?? null })
        .where('id', '=', d.importId)
        .execute();
    },
    MailboxImportUploadDeleted: async (db, { data: d }) => {
      await db.updateTable('mailbox_imports').set({ upload_deleted: true }).where('id', '=', d.importId).execute();
    },
  },
});
