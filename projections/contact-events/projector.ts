import { sql, type Kysely } from 'kysely';
import { RETENTION_MS } from '../../domain/contact-events/rules.ts';
import { entriesOf, type StoredContactEvent } from '../../domain/contact-events/events.ts';
import { defineProjector, type Projected } from '../projector.ts';
import type { ContactEventsTables } from './tables.ts';

/**
 * Contact events as the lists read them, and the workspace's distinct event names. Rows older
 * than the retention (by occurredAt) are purged by processes/contact-events/retention.ts; a
 * rebuild skips them too, so a rebuilt read model equals the live one.
 */
export const contactEventsProjector = defineProjector<ContactEventsTables>()({
  name: 'contact_events',
  version: 5,
  tables: ['contact_events', 'contact_event_names'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.contact_events (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      contact_id text NOT NULL,
      email text NOT NULL,
      name text NOT NULL,
      properties jsonb NOT NULL,
      occurred_at timestamptz NOT NULL,
      mode text NOT NULL,
      created_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.contact_event_names (
      workspace_id text NOT NULL,
      name text COLLATE "C" NOT NULL,
      -- The end of the clock hour of the name's newest occurrence: every event of the name occurred before it.
      occurred_before timestamptz NOT NULL,
      PRIMARY KEY (workspace_id, name)
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS contact_events_contact ON ${s}.contact_events (workspace_id, contact_id, occurred_at DESC, id DESC);
    -- Only the retention purge asks by occurredAt; rows arrive in roughly that order, so a BRIN index serves it almost free.
    CREATE INDEX IF NOT EXISTS contact_events_occurred ON ${s}.contact_events USING brin (occurred_at);`,
  // The first shape (one contact event each) and the current one (a request's events) are written alike, a batch in two statements.
  on: {
    ContactEventsRecorded: (db, e) => insertEvents(db, [e]),
    ContactEventRecorded: (db, e) => insertEvents(db, [e]),
  },
  applyBatch: insertEvents,
});

async function insertEvents(
  db: Kysely<ContactEventsTables>,
  events: Projected<'ContactEventsRecorded' | 'ContactEventRecorded'>[],
): Promise<void> {
  const cutoff = Date.now() - RETENTION_MS;
  const rows = events.flatMap((e) =>
    entriesOf(e).flatMap((d) =>
      Date.parse(d.occurredAt) >= cutoff ? [{ ...d, workspaceId: e.metadata.workspaceId }] : [],
    ),
  );
  if (rows.length === 0) return;
  const col = (f: (d: StoredContactEvent & { workspaceId: string }) => unknown) => rows.map(f);
  const ws = col((d) => d.workspaceId);
  await sql`INSERT INTO contact_events (id, workspace_id, contact_id, email, name, properties, occurred_at, mode, created_at)
    SELECT * FROM unnest(${col((d) => d.eventId)}::text[], ${ws}::text[], ${col((d) => d.contactId)}::text[], ${col((d) => d.email)}::text[],
      ${col((d) => d.name)}::text[], ${col((d) => JSON.stringify(d.properties))}::jsonb[], ${col((d) => d.occurredAt)}::timestamptz[],
      ${col((d) => d.mode)}::text[], ${col((d) => d.createdAt)}::timestamptz[])
    ON CONFLICT (id) DO NOTHING`.execute(db);
  // One row per (workspace, name); its bound moves at most once an hour (hour buckets, so a rebuild lands on the same values).
  // Sorted, so concurrent writers would lock in one order.
  const names = new Map<string, { ws: string; name: string; before: string }>();
  for (const d of rows) {
    const k = `${d.workspaceId}\u0000${d.name}`;
    const before = hourAfter(d.occurredAt);
    const seen = names.get(k);
    if (!seen || seen.before < before) names.set(k, { ws: d.workspaceId, name: d.name, before });
  }
  const list = [...names.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, v]) => v);
  await sql`INSERT INTO contact_event_names (workspace_id, name, occurred_before)
    SELECT * FROM unnest(${list.map((n) => n.ws)}::text[], ${list.map((n) => n.name)}::text[], ${list.map((n) => n.before)}::timestamptz[])
    ON CONFLICT (workspace_id, name) DO UPDATE SET occurred_before = excluded.occurred_before
      WHERE contact_event_names.occurred_before < excluded.occurred_before`.execute(db);
}

/** The start of the next clock hour after an instant (UTC), as ISO text (comparable as strings). */
function hourAfter(iso: string): string {
  const t = Date.parse(iso);
  return new Date(Math.floor(t / 3_600_000) * 3_600_000 + 3_600_000).toISOString();
}
