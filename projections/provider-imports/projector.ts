import { defineProjector } from '../projector.ts';
import type { ProviderImportsTables } from './tables.ts';

/** Provider imports and their reports, as the api lists them (newest first). */
export const providerImportsProjector = defineProjector<ProviderImportsTables>()({
  name: 'provider_imports',
  version: 1,
  tables: ['provider_imports'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.provider_imports (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      provider text NOT NULL,
      status text NOT NULL,
      resources text[] NOT NULL,
      report jsonb,
      last_error text,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS provider_imports_workspace_created ON ${s}.provider_imports (workspace_id, created_at DESC, id DESC);`,
  on: {
    ProviderImportQueued: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('provider_imports')
        .values({
          workspace_id: workspaceId,
          id: d.importId,
          provider: d.provider,
          status: 'queued',
          resources: d.resources,
          report: JSON.stringify(null),
          last_error: null,
          created_at: d.queuedAt,
          started_at: null,
          finished_at: null,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    ProviderImportStarted: async (db, { data: d }) => {
      await db
        .updateTable('provider_imports')
        .set({ status: 'running', started_at: d.startedAt })
        .where('id', '=', d.importId)
        .where('status', '=', 'queued')
        .execute();
    },
    ProviderImportProgressed: async (db, { data: d }) => {
      await db
        .updateTable('provider_imports')
        .set({ report: JSON.stringify(d.report) })
        .where('id', '=', d.importId)
        .execute();
    },
    ProviderImportCompleted: async (db, { data: d }) => {
      await db
        .updateTable('provider_imports')
        .set({ status: 'completed', report: JSON.stringify(d.report), finished_at: d.completedAt })
        .where('id', '=', d.importId)
        .execute();
    },
    ProviderImportFailed: async (db, { data: d }) => {
      await db
        .updateTable('provider_imports')
        .set({ status: 'failed', report: JSON.stringify(d.report), last_error: d.error, finished_at: d.failedAt })
        .where('id', '=', d.importId)
        .execute();
    },
    ProviderImportCancelled: async (db, { data: d }) => {
      await db
        .updateTable('provider_imports')
        .set({ status: 'cancelled', finished_at: d.cancelledAt })
        .where('id', '=', d.importId)
        .execute();
    },
  },
});
