import { sql, type Kysely, type Selectable } from 'kysely';
import { automationProperties } from '../../domain/contact-events/rules.ts';
import { compile, matches, type Instruction, type Step } from '../../domain/automations/steps.ts';
import { digestId } from '../../domain/shared/ids.ts';
import { CONTACT_EVENT_TYPES, entriesOf, type StoredContactEvent } from '../../domain/contact-events/events.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { EnrolmentTables } from './tables.ts';

/** One live contact event with where it sits in the log. */
type Live = StoredContactEvent & { workspaceId: string; position: number };

type Db = Kysely<EnrolmentTables>;

const DEFINITIONS = [
  'AutomationCreated',
  'AutomationUpdated',
  'AutomationPaused',
  'AutomationResumed',
  'AutomationDeleted',
] as const;
type Definition = Projected<(typeof DEFINITIONS)[number]>;
type ContactEvents = Projected<(typeof CONTACT_EVENT_TYPES)[number]>;
const isContactEvents = (e: Definition | ContactEvents): e is ContactEvents =>
  (CONTACT_EVENT_TYPES as readonly string[]).includes(e.type);

type Def = Pick<Selectable<EnrolmentTables['automation_defs']>, 'id' | 'trigger_event' | 'filters' | 'program'>;

/** A run's id: one per automation and triggering event, so a replay of the log never enrols twice. */
export const runIdOf = (automationId: string, eventId: string) =>
  digestId('automationRun', `${automationId}/${eventId}`);

/**
 * The enrolment half of automations: follows the event log under the projection runner (one
 * leader, checkpoint in the same transaction) and, for each live contact event, in log order:
 *  - enrols the contact in every live automation whose trigger names the event and whose filters
 *    match its properties (less `email`), unless the contact is already in a run of it;
 *  - ends every wait of that contact for that name (the run moves on at once), and keeps the name
 *    on each of the contact's runs that is between steps (`arrivals`), so the next wait for it
 *    that the run reaches (worker.ts) ends at once: a wait never depends on when the worker walks;
 *  - writes what it did for the event (`automation_event_outcomes`), which POST /events reads back
 *    after waiting for this process to pass the event's position (read-your-writes).
 * It keeps its own copy of the automations (definition as of that point of the log). The runs it
 * makes are walked by worker.ts. Never rebuilt: its tables are the state of work under way.
 */
export const automationEnrolment = defineReactor<EnrolmentTables>()({
  name: 'automation_enrolment',
  version: 1,
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
      arrivals jsonb NOT NULL DEFAULT '[]',
      position bigint NOT NULL,
      trigger_event_id text NOT NULL,
      enrolled_at timestamptz NOT NULL,
      completed_at timestamptz
    );
    CREATE UNIQUE INDEX IF NOT EXISTS automation_runs_active ON ${s}.automation_runs (automation_id, contact_id) WHERE status <> 'completed';
    CREATE INDEX IF NOT EXISTS automation_runs_due ON ${s}.automation_runs (wake_at) WHERE status <> 'completed';
    ALTER TABLE ${s}.automation_runs ADD COLUMN IF NOT EXISTS arrivals jsonb NOT NULL DEFAULT '[]';
    DROP INDEX IF EXISTS ${s}.automation_runs_waits;
    CREATE INDEX IF NOT EXISTS automation_runs_contact ON ${s}.automation_runs (workspace_id, contact_id) WHERE status <> 'completed';
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
    ALTER TABLE ${s}.automation_sends ADD COLUMN IF NOT EXISTS from_address text,
      ADD COLUMN IF NOT EXISTS email_id text, ADD COLUMN IF NOT EXISTS refusal_code text,
      ADD COLUMN IF NOT EXISTS refusal_message text, ADD COLUMN IF NOT EXISTS sent_at timestamptz;
    CREATE INDEX IF NOT EXISTS automation_sends_pending ON ${s}.automation_sends (run_id) WHERE sent_at IS NULL;
    CREATE INDEX IF NOT EXISTS automation_sends_automation ON ${s}.automation_sends (workspace_id, automation_id, created_at DESC, id DESC);
    CREATE TABLE IF NOT EXISTS ${s}.automation_event_outcomes (
      event_id text PRIMARY KEY,
      enrolled text[] NOT NULL,
      resumed integer NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE INDEX IF NOT EXISTS automation_event_outcomes_created ON ${s}.automation_event_outcomes (created_at);`,
  reactsTo: [...DEFINITIONS, ...CONTACT_EVENT_TYPES],
  react: enrol,
});

/** Contact events are taken a run of them at a time, between the definition changes that come in order with them. */
async function enrol(db: Db, events: (Definition | ContactEvents)[]): Promise<void> {
  let segment: Live[] = [];
  for (const event of events) {
    if (isContactEvents(event)) {
      for (const e of entriesOf(event))
        if (e.mode === 'live')
          segment.push({ ...e, workspaceId: event.metadata.workspaceId, position: event.position });
      continue;
    }
    await applyContactEvents(db, segment);
    segment = [];
    await applyDefinition(db, event);
  }
  await applyContactEvents(db, segment);
}

async function applyDefinition(db: Db, event: Definition): Promise<void> {
  const { workspaceId } = event.metadata;
  switch (event.type) {
    case 'AutomationCreated':
    case 'AutomationUpdated': {
      const d = event.data;
      const program = JSON.stringify(compile(d.steps as Step[]));
      await sql`INSERT INTO automation_defs (id, workspace_id, live, trigger_event, filters, program)
        VALUES (${d.automationId}, ${workspaceId}, ${event.type === 'AutomationCreated' ? event.data.status === 'live' : false},
                ${d.trigger.event}, ${JSON.stringify(d.trigger.filters)}::jsonb, ${program}::jsonb)
        ON CONFLICT (id) DO UPDATE SET trigger_event = excluded.trigger_event, filters = excluded.filters, program = excluded.program`.execute(
        db,
      );
      return;
    }
    case 'AutomationPaused':
    case 'AutomationResumed':
      await sql`UPDATE automation_defs SET live = ${event.type === 'AutomationResumed'} WHERE id = ${event.data.automationId}`.execute(
        db,
      );
      return;
    case 'AutomationDeleted': {
      const d = event.data;
      // Its runs end where they stand: a job already on the bus finds no row (worker.ts acks it), and a
      // walk holding a run's lock finishes first, so no step of the automation runs after this commits.
      // Nothing can read the runs or send requests of a deleted automation, so they go with it.
      await sql`DELETE FROM automation_defs WHERE id = ${d.automationId}`.execute(db);
      await sql`DELETE FROM automation_runs WHERE workspace_id = ${workspaceId} AND automation_id = ${d.automationId}`.execute(
        db,
      );
      await sql`DELETE FROM automation_sends WHERE workspace_id = ${workspaceId} AND automation_id = ${d.automationId}`.execute(
        db,
      );
      return;
    }
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
  const { rows: defs } = await sql<
    Def & { workspace_id: string }
  >`SELECT id, workspace_id, trigger_event, filters, program FROM automation_defs
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
        runId: runIdOf(def.id, d.eventId),
        eventId: d.eventId,
        workspaceId,
        automationId: def.id,
        contactId: d.contactId,
        email: d.email,
        properties: JSON.stringify(visible),
        program: JSON.stringify(def.program),
        position: d.position,
        createdAt: d.createdAt,
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
    for (const r of rows)
      enrolled.set(r.trigger_event_id, [...(enrolled.get(r.trigger_event_id) ?? []), r.automation_id]);
  }
  const resumed = await endWaits(db, events);
  const touched = [...new Set([...enrolled.keys(), ...resumed.keys()])];
  if (touched.length === 0) return;
  await sql`INSERT INTO automation_event_outcomes (event_id, enrolled, resumed, created_at)
    SELECT ev, coalesce(string_to_array(nullif(aut, ''), ','), '{}'), n, now()
    FROM unnest(${touched}::text[], ${touched.map((id) => (enrolled.get(id) ?? []).join(','))}::text[], ${touched.map((id) => resumed.get(id) ?? 0)}::int[]) AS t(ev, aut, n)
    ON CONFLICT (event_id) DO NOTHING`.execute(db);
}

interface RunAtEvents {
  id: string;
  workspace_id: string;
  contact_id: string;
  trigger_event_id: string;
  program: Instruction[];
  pc: number;
  status: 'ready' | 'waiting';
  wait_event: string | null;
  wake_at: Date;
  arrivals: string[];
}

/**
 * The contact's runs meet the events one after another, each from the first event after the one
 * that enrolled it: a run waiting for the name (its timeout not yet passed when the event was
 * stored) moves on, and a run between steps (ready, or its wait over but not walked yet) keeps
 * the name for the next wait it reaches. The rows are locked, so a walk in progress finishes
 * first and its outcome is what the events meet. Returns how many waits each event ended.
 */
async function endWaits(db: Db, events: Live[]): Promise<Map<string, number>> {
  const order = new Map(events.map((e, i) => [e.eventId, i]));
  const byContact = new Map<string, Live[]>();
  for (const e of events) {
    const k = `${e.workspaceId}\u0000${e.contactId}`;
    const list = byContact.get(k);
    if (list) list.push(e);
    else byContact.set(k, [e]);
  }
  const contacts = [...byContact.values()].map((l) => l[0]!);
  const { rows } =
    await sql<RunAtEvents>`SELECT r.id, r.workspace_id, r.contact_id, r.trigger_event_id, r.program, r.pc, r.status, r.wait_event, r.wake_at, r.arrivals
    FROM automation_runs r
    WHERE (r.workspace_id, r.contact_id) IN (SELECT * FROM unnest(${contacts.map((e) => e.workspaceId)}::text[], ${contacts.map((e) => e.contactId)}::text[]))
      AND r.status <> 'completed'
      AND EXISTS (SELECT 1 FROM jsonb_array_elements(r.program) i WHERE i->>'op' = 'wait_for_event' AND i->>'name' = ANY(${[...new Set(events.map((e) => e.name))]}::text[]))
    ORDER BY r.id FOR UPDATE`.execute(db);
  const resumed = new Map<string, number>();
  const changed: { run: RunAtEvents; resumed: boolean; position: number }[] = [];
  for (const run of rows) {
    const after = order.get(run.trigger_event_id) ?? -1;
    const arrivals = new Set(run.arrivals);
    let moved: { resumed: boolean; position: number } | null = null;
    for (const e of byContact.get(`${run.workspace_id}\u0000${run.contact_id}`)!) {
      if (order.get(e.eventId)! <= after) continue;
      const over = run.status === 'waiting' && run.wake_at.getTime() <= Date.parse(e.createdAt);
      if (run.status === 'waiting' && !over) {
        if (run.wait_event !== e.name) continue;
        run.status = 'ready';
        run.pc++;
        run.wait_event = null;
        resumed.set(e.eventId, (resumed.get(e.eventId) ?? 0) + 1);
        moved = { resumed: true, position: e.position };
        continue;
      }
      if (arrivals.has(e.name) || !run.program.some((i) => i.op === 'wait_for_event' && i.name === e.name)) continue;
      if (nextWaitFor(run.program, over ? run.pc + 1 : run.pc, arrivals) === e.name)
        resumed.set(e.eventId, (resumed.get(e.eventId) ?? 0) + 1);
      arrivals.add(e.name);
      moved = { resumed: moved?.resumed ?? false, position: e.position };
    }
    run.arrivals = [...arrivals];
    if (moved) changed.push({ run, ...moved });
  }
  if (changed.length === 0) return resumed;
  const col = <T>(f: (c: (typeof changed)[number]) => T) => changed.map(f);
  // A new `seq` voids a job already on the bus, whose walk would not wait for the contact events
  // read model to hold these events (a branch reads it); the run is claimed again at once.
  await sql`UPDATE automation_runs r SET status = t.status, pc = t.pc, wait_event = t.wait_event, arrivals = t.arrivals::jsonb,
      wake_at = CASE WHEN t.resumed THEN now() ELSE r.wake_at END, enqueued_at = NULL, seq = r.seq + 1, position = t.pos
    FROM unnest(${col((c) => c.run.id)}::text[], ${col((c) => c.run.status)}::text[], ${col((c) => c.run.pc)}::int[], ${col((c) => c.run.wait_event)}::text[],
                ${col((c) => JSON.stringify(c.run.arrivals))}::text[], ${col((c) => c.resumed)}::boolean[], ${col((c) => c.position)}::bigint[])
         AS t(id, status, pc, wait_event, arrivals, resumed, pos)
    WHERE r.id = t.id`.execute(db);
  return resumed;
}

/**
 * The name of the wait a run at `pc` stops at next, passing the waits its arrivals end; null when
 * that is not settled yet (a branch or a timed wait comes first) or the run ends before any.
 */
function nextWaitFor(program: Instruction[], pc: number, arrivals: ReadonlySet<string>): string | null {
  const kept = new Set(arrivals);
  while (pc < program.length) {
    const step = program[pc]!;
    if (step.op === 'jump') pc = step.to;
    else if (step.op === 'send') pc++;
    else if (step.op === 'wait_for_event' && kept.delete(step.name)) pc++;
    else return step.op === 'wait_for_event' ? step.name : null;
  }
  return null;
}
