import crypto from 'node:crypto';
import { sql, type Kysely, type Transaction } from 'kysely';
import { automationProperties } from '../../domain/contact-events/rules.ts';
import { compile, matches, type Filter, type Step } from '../../domain/automations/steps.ts';
import { CONTACT_EVENT_TYPES, entriesOf, type StoredContactEvent } from '../../domain/contact-events/events.ts';
import type { ProjectedEvent, Projector } from '../../projections/projector.ts';

/** One live contact event with where it sits in the log. */
type Live = StoredContactEvent & { workspaceId: string; position: number };

type Db = Kysely<any> | Transaction<any>;

interface Def {
  id: string;
  trigger_event: string;
  filters: Filter[];
  program: unknown[];
}

/** A run's id: one per automation and triggering event, so a replay of the log never enrols twice. */
export const runIdOf = (automationId: string, eventId: string) =>
  `aur_${crypto.createHash('sha256').update(`${automationId}/${eventId}`).digest('hex').slice(0, 24)}`;

/**
 * The enrolment half of automations: follows the event log under the projection runner (one
 * leader, checkpoint in the same transaction) and, for each live contact event, in log order:
 *  - enrols the contact in every live automation whose trigger names the event and whose filters
 *    match its properties (less `email`), unless the contact is already in a run of it;
 *  - ends every wait of that contact for that name (the run moves on at once);
 *  - writes what it did for the event (`automation_event_outcomes`), which POST /events reads back
 *    after waiting for this process to pass the event's position (read-your-writes).
 * It keeps its own copy of the automations (definition as of that point of the log). The runs it
 * makes are walked by worker.ts. Never rebuilt: its tables are the state of work under way.
 */
export const automationEnrolment: Projector = {
  name: 'automation_enrolment',
  version: 1,
  rebuildable: false,
  tables: ['automation_defs', 'automation_runs', 'automation_sends', 'automation_event_outcomes'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.automation_defs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      live boolean NOT NULL,
      trigger_event text NOT NULL,
      filters jsonb NOT NULL,
      program jsonb NOT NULL
    );
    CREATE INDEX IF NOT EXISTS automation_defs_trigger ON ${s}.automation_defs (workspace_id, trigger_event) WHERE live;
    CREATE TABLE IF NOT EXISTS ${s}.automation_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      automation_id text NOT NULL,
      contact_id text NOT NULL,
      email text NOT NULL,
      properties jsonb NOT NULL,
      program jsonb NOT NULL,
      pc integer NOT NULL DEFAULT 0,
      status text NOT NULL,
      wait_event text,
      wake_at timestamptz,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0,
      position bigint NOT NULL,
      trigger_event_id text NOT NULL,
      enrolled_at timestamptz NOT NULL,
      completed_at timestamptz
    );
    CREATE UNIQUE INDEX IF NOT EXISTS automation_runs_active ON ${s}.automation_runs (automation_id, contact_id) WHERE status <> 'completed';
    CREATE INDEX IF NOT EXISTS automation_runs_due ON ${s}.automation_runs (wake_at) WHERE status <> 'completed';
    CREATE INDEX IF NOT EXISTS automation_runs_waits ON ${s}.automation_runs (workspace_id, contact_id, wait_event) WHERE status = 'waiting' AND wait_event IS NOT NULL;
    CREATE INDEX IF NOT EXISTS automation_runs_automation ON ${s}.automation_runs (workspace_id, automation_id, enrolled_at DESC, id DESC);
    CREATE TABLE IF NOT EXISTS ${s}.automation_sends (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      automation_id text NOT NULL,
      run_id text NOT NULL,
      contact_id text NOT NULL,
      email text NOT NULL,
      template text NOT NULL,
      subject text,
      data jsonb NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS automation_sends_automation ON ${s}.automation_sends (workspace_id, automation_id, created_at DESC, id DESC);
    CREATE TABLE IF NOT EXISTS ${s}.automation_event_outcomes (
      event_id text PRIMARY KEY,
      enrolled text[] NOT NULL,
      resumed integer NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS automation_event_outcomes_created ON ${s}.automation_event_outcomes (created_at);`,
  handles: ['AutomationCreated', 'AutomationUpdated', 'AutomationPaused', 'AutomationResumed', 'AutomationDeleted', ...CONTACT_EVENT_TYPES],
  async apply(db, event) {
    await this.applyBatch!(db, [event]);
  },
  async applyBatch(db, events) {
    let segment: Live[] = [];
    for (const event of events) {
      if ((CONTACT_EVENT_TYPES as readonly string[]).includes(event.type)) {
        for (const e of entriesOf(event)) if (e.mode === 'live') segment.push({ ...e, workspaceId: event.metadata.workspaceId as string, position: event.position });
        continue;
      }
      await applyContactEvents(db, segment);
      segment = [];
      await applyDefinition(db, event);
    }
    await applyContactEvents(db, segment);
  },
};

async function applyDefinition(db: Db, event: ProjectedEvent): Promise<void> {
  const d = event.data as any;
  switch (event.type) {
    case 'AutomationCreated':
    case 'AutomationUpdated': {
      const program = JSON.stringify(compile(d.steps as Step[]));
      await sql`INSERT INTO automation_defs (id, workspace_id, live, trigger_event, filters, program)
        VALUES (${d.automationId}, ${event.metadata.workspaceId as string}, ${event.type === 'AutomationCreated' ? d.status === 'live' : false},
                ${d.trigger.event}, ${JSON.stringify(d.trigger.filters)}::jsonb, ${program}::jsonb)
        ON CONFLICT (id) DO UPDATE SET trigger_event = excluded.trigger_event, filters = excluded.filters, program = excluded.program`.execute(db);
      break;
    }
    case 'AutomationPaused':
    case 'AutomationResumed':
      await sql`UPDATE automation_defs SET live = ${event.type === 'AutomationResumed'} WHERE id = ${d.automationId}`.execute(db);
      break;
    case 'AutomationDeleted':
      // Its runs end where they stand: a job already on the bus finds no row (worker.ts acks it), and a
      // walk holding a run's lock finishes first, so no step of the automation runs after this commits.
      // Nothing can read the runs or send requests of a deleted automation, so they go with it.
      await sql`DELETE FROM automation_defs WHERE id = ${d.automationId}`.execute(db);
      await sql`DELETE FROM automation_runs WHERE workspace_id = ${event.metadata.workspaceId as string} AND automation_id = ${d.automationId}`.execute(db);
      await sql`DELETE FROM automation_sends WHERE workspace_id = ${event.metadata.workspaceId as string} AND automation_id = ${d.automationId}`.execute(db);
      break;
  }
}

interface Candidate {
  runId: string;
  eventId: string;
  workspaceId: string;
  automationId: string;
  contactId: string;
  email: string;
  properties: string;
  program: string;
  position: number;
  createdAt: string;
}

async function applyContactEvents(db: Db, events: Live[]): Promise<void> {
  if (events.length === 0) return;
  const workspaces = [...new Set(events.map((e) => e.workspaceId))];
  const names = [...new Set(events.map((e) => e.name))];
  const { rows: defs } = await sql<Def & { workspace_id: string }>`SELECT id, workspace_id, trigger_event, filters, program FROM automation_defs
    WHERE live AND workspace_id = ANY(${workspaces}) AND trigger_event = ANY(${names}) ORDER BY id`.execute(db);
  const byTrigger = new Map<string, Def[]>();
  for (const d of defs) {
    const k = `${d.workspace_id}\u0000${d.trigger_event}`;
    byTrigger.set(k, [...(byTrigger.get(k) ?? []), d]);
  }
  const candidates: Candidate[] = [];
  for (const d of events) {
    const workspaceId = d.workspaceId;
    const visible = automationProperties(d.properties);
    for (const def of byTrigger.get(`${workspaceId}\u0000${d.name}`) ?? []) {
      if (!matches(def.filters, visible)) continue;
      candidates.push({
        runId: runIdOf(def.id, d.eventId), eventId: d.eventId, workspaceId, automationId: def.id, contactId: d.contactId, email: d.email,
        properties: JSON.stringify(visible), program: JSON.stringify(def.program), position: d.position, createdAt: d.createdAt,
      });
    }
  }
  const enrolled = new Map<string, string[]>();
  if (candidates.length > 0) {
    const col = <K extends keyof Candidate>(k: K) => candidates.map((c) => c[k]);
    // In log order: the first event wins a contact's place in an automation; the partial unique index says who is already in.
    // A run is enrolled when its trigger was stored, not when this process got to it: events sent with the
    // trigger (same request, same default occurredAt) are then "since enrolment" for a branch.
    const { rows } = await sql<{ trigger_event_id: string; automation_id: string }>`INSERT INTO automation_runs
        (id, workspace_id, automation_id, contact_id, email, properties, program, status, wake_at, position, trigger_event_id, enrolled_at)
      SELECT id, ws, aut, con, email, props::jsonb, prog::jsonb, 'ready', now(), pos, ev, at
      FROM unnest(${col('runId')}::text[], ${col('workspaceId')}::text[], ${col('automationId')}::text[], ${col('contactId')}::text[],
                  ${col('email')}::text[], ${col('properties')}::text[], ${col('program')}::text[], ${col('position')}::bigint[], ${col('eventId')}::text[],
                  ${col('createdAt')}::timestamptz[])
           WITH ORDINALITY AS t(id, ws, aut, con, email, props, prog, pos, ev, at, n)
      ORDER BY n
      ON CONFLICT DO NOTHING RETURNING trigger_event_id, automation_id`.execute(db);
    for (const r of rows) enrolled.set(r.trigger_event_id, [...(enrolled.get(r.trigger_event_id) ?? []), r.automation_id]);
  }
  // Waits end on the first event of their name for their contact; runs only start waiting outside this
  // transaction (worker.ts), so the set of waits is fixed for the whole batch.
  const first = new Map<string, Live>();
  for (const e of events) {
    const k = `${e.workspaceId}\u0000${e.contactId}\u0000${e.name}`;
    if (!first.has(k)) first.set(k, e);
  }
  const firsts = [...first.values()];
  const { rows: resumedRows } = await sql<{ workspace_id: string; contact_id: string; name: string }>`
    UPDATE automation_runs r SET status = 'ready', pc = r.pc + 1, wait_event = NULL, wake_at = now(), enqueued_at = NULL, seq = r.seq + 1, position = t.pos
    FROM unnest(${firsts.map((e) => e.workspaceId)}::text[], ${firsts.map((e) => e.contactId)}::text[],
                ${firsts.map((e) => e.name)}::text[], ${firsts.map((e) => e.position)}::bigint[]) AS t(ws, con, name, pos)
    WHERE r.status = 'waiting' AND r.wait_event IS NOT NULL AND r.workspace_id = t.ws AND r.contact_id = t.con AND r.wait_event = t.name
    RETURNING r.workspace_id, r.contact_id, t.name`.execute(db);
  const resumed = new Map<string, number>();
  for (const r of resumedRows) {
    const eventId = first.get(`${r.workspace_id}\u0000${r.contact_id}\u0000${r.name}`)!.eventId;
    resumed.set(eventId, (resumed.get(eventId) ?? 0) + 1);
  }
  const touched = [...new Set([...enrolled.keys(), ...resumed.keys()])];
  if (touched.length === 0) return;
  await sql`INSERT INTO automation_event_outcomes (event_id, enrolled, resumed, created_at)
    SELECT ev, coalesce(string_to_array(nullif(aut, ''), ','), '{}'), n, now()
    FROM unnest(${touched}::text[], ${touched.map((id) => (enrolled.get(id) ?? []).join(','))}::text[], ${touched.map((id) => resumed.get(id) ?? 0)}::int[]) AS t(ev, aut, n)
    ON CONFLICT (event_id) DO NOTHING`.execute(db);
}
