import type { Kysely } from 'kysely';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { BroadcastWorkTables } from './tables.ts';

const REACTS_TO = ['BroadcastCreated', 'BroadcastCancelled'] as const;
type Event = Projected<(typeof REACTS_TO)[number]>;

/**
 * The scheduling half of broadcasts: a created broadcast gets a run due at its scheduled time (or
 * at once), a cancel ends a run not yet started. From there the worker (worker.ts) moves the run:
 * it takes the recipients into `broadcast_recipients` at the start and sends them page by page.
 * Never rebuilt: the tables are the state of work done outside (a replay would send again).
 */
export const broadcastSchedule = defineReactor<BroadcastWorkTables>()({
  name: 'broadcast_schedule',
  version: 1,
  tables: ['broadcast_runs', 'broadcast_recipients'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.broadcast_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      status text NOT NULL,
      from_address text NOT NULL,
      template_id text NOT NULL,
      subject text,
      audience_ids text[] NOT NULL,
      due_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS broadcast_runs_due ON ${s}.broadcast_runs (due_at) WHERE status <> 'done';
    CREATE TABLE IF NOT EXISTS ${s}.broadcast_recipients (
      broadcast_id text NOT NULL,
      seq integer NOT NULL,
      contact_id text NOT NULL,
      email text NOT NULL,
      audience_id text,
      props jsonb NOT NULL,
      email_id text,
      refusal_code text,
      sent_at timestamptz,
      PRIMARY KEY (broadcast_id, seq)
    );
    CREATE INDEX IF NOT EXISTS broadcast_recipients_unsent ON ${s}.broadcast_recipients (broadcast_id, seq) WHERE sent_at IS NULL;`,
  reactsTo: REACTS_TO,
  react: async (db, events) => {
    for (const event of events) await apply(db, event);
  },
});

async function apply(db: Kysely<BroadcastWorkTables>, event: Event): Promise<void> {
  if (event.type === 'BroadcastCreated') {
    const d = event.data;
    await db
      .insertInto('broadcast_runs')
      .values({
        id: d.broadcastId,
        workspace_id: event.metadata.workspaceId,
        status: 'scheduled',
        from_address: d.from,
        template_id: d.templateId,
        subject: d.subject,
        audience_ids: d.audienceIds,
        due_at: d.scheduledAt ?? d.createdAt,
      })
      .onConflict((oc) => oc.column('id').doNothing())
      .execute();
    return;
  }
  await db
    .updateTable('broadcast_runs')
    .set({ status: 'done' })
    .where('id', '=', event.data.broadcastId)
    .where('status', '=', 'scheduled')
    .execute();
}
