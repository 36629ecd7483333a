import { defineReactor } from '../../projections/projector.ts';
import type { ExportWorkTables } from './tables.ts';

/**
 * The scheduling half of exports: a requested export gets a run row, due at once; the worker
 * (worker.ts) writes its zip. Never rebuilt: the table is the state of work done (a replay would
 * export again).
 */
export const exportSchedule = defineReactor<ExportWorkTables>()({
  name: 'export_schedule',
  version: 1,
  tables: ['export_runs'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.export_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      status text NOT NULL,
      attempt integer NOT NULL DEFAULT 0,
      sha256 text,
      expires_at timestamptz,
      file_deleted boolean NOT NULL DEFAULT false,
      due_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS export_runs_due ON ${s}.export_runs (due_at) WHERE status IN ('queued', 'running');
    CREATE INDEX IF NOT EXISTS export_runs_expiring ON ${s}.export_runs (expires_at)
      WHERE sha256 IS NOT NULL AND NOT file_deleted;`,
  reactsTo: ['ExportRequested'],
  react: async (db, events) => {
    for (const event of events) {
      await db
        .insertInto('export_runs')
        .values({
          id: event.data.exportId,
          workspace_id: event.metadata.workspaceId,
          status: 'queued',
          sha256: null,
          expires_at: null,
          due_at: event.data.createdAt,
          enqueued_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    }
  },
});
