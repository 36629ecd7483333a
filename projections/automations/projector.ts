import { sql, type Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { AutomationsTables } from './tables.ts';

/** Automations as the API reads them; `revision` is the stream revision behind the ETag. */
export const automationsProjector = defineProjector<AutomationsTables>()({
  name: 'automations',
  version: 1,
  tables: ['automations'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.automations (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      name text NOT NULL,
      status text NOT NULL,
      trigger jsonb NOT NULL,
      steps jsonb NOT NULL,
      revision integer NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );`,
  indexes: (s) =>
    `CREATE INDEX IF NOT EXISTS automations_workspace_created ON ${s}.automations (workspace_id, created_at DESC, id DESC);`,
  on: {
    AutomationCreated: async (db, { metadata: { workspaceId }, revision, data: d }) => {
      await sql`INSERT INTO automations (id, workspace_id, name, status, trigger, steps, revision, created_at, updated_at)
        VALUES (${d.automationId}, ${workspaceId}, ${d.name}, ${d.status}, ${JSON.stringify(d.trigger)}::jsonb,
                ${JSON.stringify(d.steps)}::jsonb, ${revision}, ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    AutomationUpdated: async (db, { revision, data: d }) => {
      await sql`UPDATE automations SET name = ${d.name}, trigger = ${JSON.stringify(d.trigger)}::jsonb, steps = ${JSON.stringify(d.steps)}::jsonb,
        revision = ${revision}, updated_at = ${d.updatedAt} WHERE id = ${d.automationId}`.execute(db);
    },
    AutomationPaused: (db, e) => setStatus(db, e, 'paused'),
    AutomationResumed: (db, e) => setStatus(db, e, 'live'),
    AutomationDeleted: async (db, { data: d }) => {
      await sql`DELETE FROM automations WHERE id = ${d.automationId}`.execute(db);
    },
  },
});

/** A pause or resume dates the row by when it was recorded, as the live table always has: a rebuild must write the same. */
async function setStatus(
  db: Kysely<AutomationsTables>,
  e: Projected<'AutomationPaused' | 'AutomationResumed'>,
  status: 'live' | 'paused',
): Promise<void> {
  await sql`UPDATE automations SET status = ${status}, revision = ${e.revision}, updated_at = ${e.recordedAt.toISOString()}
    WHERE id = ${e.data.automationId}`.execute(db);
}
