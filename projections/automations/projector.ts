import { sql } from 'kysely';
import type { Projector } from '../projector.ts';

/** Automations as the API reads them; `revision` is the stream revision behind the ETag. */
export const automationsProjector: Projector = {
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
  indexes: (s) => `CREATE INDEX IF NOT EXISTS automations_workspace_created ON ${s}.automations (workspace_id, created_at DESC, id DESC);`,
  handles: ['AutomationCreated', 'AutomationUpdated', 'AutomationPaused', 'AutomationResumed', 'AutomationDeleted'],
  async apply(db, event) {
    const d = event.data as any;
    const at = event.recordedAt.toISOString();
    switch (event.type) {
      case 'AutomationCreated':
        await sql`INSERT INTO automations (id, workspace_id, name, status, trigger, steps, revision, created_at, updated_at)
          VALUES (${d.automationId}, ${event.metadata.workspaceId as string}, ${d.name}, ${d.status}, ${JSON.stringify(d.trigger)}::jsonb,
                  ${JSON.stringify(d.steps)}::jsonb, ${event.revision}, ${d.createdAt}, ${d.createdAt})
          ON CONFLICT (id) DO NOTHING`.execute(db);
        break;
      case 'AutomationUpdated':
        await sql`UPDATE automations SET name = ${d.name}, trigger = ${JSON.stringify(d.trigger)}::jsonb, steps = ${JSON.stringify(d.steps)}::jsonb,
          revision = ${event.revision}, updated_at = ${d.updatedAt} WHERE id = ${d.automationId}`.execute(db);
        break;
      case 'AutomationPaused':
      case 'AutomationResumed':
        await sql`UPDATE automations SET status = ${event.type === 'AutomationPaused' ? 'paused' : 'live'}, revision = ${event.revision},
          updated_at = ${at} WHERE id = ${d.automationId}`.execute(db);
        break;
      case 'AutomationDeleted':
        await sql`DELETE FROM automations WHERE id = ${d.automationId}`.execute(db);
        break;
    }
  },
};
