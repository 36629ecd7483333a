import { defineProjector } from '../projector.ts';
import type { ExportsTables } from './tables.ts';

/** Workspace exports as the api lists them (newest first, offset paging). */
export const exportsProjector = defineProjector<ExportsTables>()({
  name: 'exports',
  version: 1,
  tables: ['exports'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.exports (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      status text NOT NULL,
      phase text NOT NULL,
      created_by jsonb NOT NULL,
      threads_done integer NOT NULL DEFAULT 0,
      threads_total integer NOT NULL DEFAULT 0,
      sha256 text,
      size_bytes bigint,
      file_name text,
      counts jsonb,
      error text,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz,
      expires_at timestamptz
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS exports_workspace_created ON ${s}.exports (workspace_id, created_at DESC, id DESC);`,
  on: {
    ExportRequested: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('exports')
        .values({
          workspace_id: workspaceId,
          id: d.exportId,
          status: 'queued',
          phase: 'queued',
          created_by: JSON.stringify(d.createdBy),
          threads_done: 0,
          threads_total: 0,
          sha256: null,
          size_bytes: null,
          file_name: null,
          counts: null,
          error: null,
          created_at: d.createdAt,
          started_at: null,
          finished_at: null,
          expires_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    ExportStarted: async (db, { data: d }) => {
      await db
        .updateTable('exports')
        .set({
          status: 'running',
          phase: 'mail',
          threads_done: 0,
          threads_total: d.threadsTotal,
          started_at: d.startedAt,
        })
        .where('id', '=', d.exportId)
        .execute();
    },
    ExportProgressed: async (db, { data: d }) => {
      await db
        .updateTable('exports')
        .set({ phase: d.phase, threads_done: d.threadsDone, threads_total: d.threadsTotal })
        .where('id', '=', d.exportId)
        .execute();
    },
    ExportCompleted: async (db, { data: d }) => {
      await db
        .updateTable('exports')
        .set({
          status: 'ready',
          phase: 'done',
          threads_done: (eb) => eb.ref('threads_total'),
          sha256: d.file.sha256,
          size_bytes: String(d.file.size),
          file_name: d.fileName,
          counts: JSON.stringify(d.counts),
          finished_at: d.finishedAt,
          expires_at: d.expiresAt,
        })
        .where('id', '=', d.exportId)
        .execute();
    },
    ExportFailed: async (db, { data: d }) => {
      await db
        .updateTable('exports')
        .set({ status: 'failed', error: d.error, finished_at: d.failedAt })
        .where('id', '=', d.exportId)
        .execute();
    },
    ExportFileDeleted: async (db, { data: d }) => {
      await db.updateTable('exports').set({ status: 'expired', sha256: null }).where('id', '=', d.exportId).execute();
    },
  },
});
