import { emptyReport } from '../../domain/provider-imports/providers.ts';
import { defineReactor } from '../../projections/projector.ts';
import type { ProviderImportWorkTables } from './tables.ts';

/**
 * The scheduling half of provider imports: a queued import gets a run due at once, a cancel ends
 * it. From there the worker (worker.ts) moves the run page by page. Never rebuilt: the tables are
 * the state of work done outside (a replay would import again).
 */
export const providerImportSchedule = defineReactor<ProviderImportWorkTables>()({
  name: 'provider_import_schedule',
  version: 1,
  tables: ['provider_import_runs', 'provider_import_sources'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.provider_import_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      provider text NOT NULL,
      resources text[] NOT NULL,
      status text NOT NULL,
      stage integer NOT NULL DEFAULT 0,
      cursor text,
      report jsonb NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      due_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS provider_import_runs_due ON ${s}.provider_import_runs (due_at) WHERE status <> 'done';
    CREATE TABLE IF NOT EXISTS ${s}.provider_import_sources (
      workspace_id text NOT NULL,
      provider text NOT NULL,
      resource text NOT NULL,
      source_id text NOT NULL,
      import_id text NOT NULL,
      target_id text,
      seen_by text,
      PRIMARY KEY (workspace_id, provider, resource, source_id)
    );
    ALTER TABLE ${s}.provider_import_sources ADD COLUMN IF NOT EXISTS seen_by text;`,
  reactsTo: ['ProviderImportQueued', 'ProviderImportCancelled'],
  react: async (db, events) => {
    for (const event of events) {
      if (event.type === 'ProviderImportQueued') {
        const d = event.data;
        await db
          .insertInto('provider_import_runs')
          .values({
            id: d.importId,
            workspace_id: event.metadata.workspaceId,
            provider: d.provider,
            resources: d.resources,
            status: 'queued',
            cursor: null,
            report: JSON.stringify(emptyReport()),
            due_at: d.queuedAt,
          })
          .onConflict((oc) => oc.column('id').doNothing())
          .execute();
      } else {
        await db
          .updateTable('provider_import_runs')
          .set({ status: 'done' })
          .where('id', '=', event.data.importId)
          .execute();
      }
    }
  },
});
