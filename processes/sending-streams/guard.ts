import { sql, type Kysely } from 'kysely';
import { LANE_THRESHOLDS, sentBy, tripOf, type LaneCounts } from '../../domain/sending-streams/decide.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { SendingLaneGuardTables } from './tables.ts';

type Db = Kysely<SendingLaneGuardTables>;

const REACTS_TO = [
  'EmailRecipientDelivered',
  'EmailRecipientBounced',
  'EmailRecipientComplained',
  'SendingStreamPaused',
  'SendingStreamResumed',
] as const;
type Event = Projected<(typeof REACTS_TO)[number]>;

const laneId = (workspaceId: string, stream: string) => `${workspaceId}:${stream}`;
const dayOf = (iso: string) => iso.slice(0, 10);
const daysBefore = (day: string, n: number) =>
  new Date(Date.parse(`${day}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);

interface Delta extends LaneCounts {
  workspaceId: string;
  stream: string;
  day: string;
}

/**
 * Decides when a sending lane pauses, where the counts are known: it follows final answers and
 * complaints in log order, counts them per lane and day, and when a lane that is open passes a
 * threshold over the window (domain/sending-streams/decide.ts) it marks a pause owed, which
 * worker.ts appends. Counts start again at a resume: what the resume's day held then is kept as a
 * baseline and left out, so the mail that tripped the lane does not trip it again at once.
 * An expiry counts as sent and not as a bounce (it is not a hard bounce). Never rebuilt (a reactor).
 */
export const sendingLaneGuard = defineReactor<SendingLaneGuardTables>()({
  name: 'sending_lane_guard',
  version: 1,
  tables: ['sending_lane_guard_days', 'sending_lane_guard'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.sending_lane_guard_days (
      workspace_id text NOT NULL,
      stream text NOT NULL,
      day date NOT NULL,
      sent integer NOT NULL,
      bounced integer NOT NULL,
      complained integer NOT NULL,
      PRIMARY KEY (workspace_id, stream, day)
    );
    CREATE TABLE IF NOT EXISTS ${s}.sending_lane_guard (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      stream text NOT NULL,
      paused boolean NOT NULL DEFAULT false,
      since_day date,
      base_sent integer NOT NULL DEFAULT 0,
      base_bounced integer NOT NULL DEFAULT 0,
      base_complained integer NOT NULL DEFAULT 0,
      trip jsonb,
      enqueued_at timestamptz,
      claims integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS sending_lane_guard_owed ON ${s}.sending_lane_guard (id) WHERE trip IS NOT NULL;`,
  reactsTo: REACTS_TO,
  react: guard,
});

async function guard(db: Db, events: Event[]): Promise<void> {
  const deltas = new Map<string, Delta>();
  let today = '';
  const count = (workspaceId: string, stream: string, at: string, add: LaneCounts) => {
    const day = dayOf(at);
    if (day > today) today = day;
    const key = `${workspaceId}:${stream}:${day}`;
    const d = deltas.get(key) ?? { workspaceId, stream, day, sent: 0, bounced: 0, complained: 0 };
    d.sent += add.sent;
    d.bounced += add.bounced;
    d.complained += add.complained;
    deltas.set(key, d);
  };
  for (const e of events) {
    const ws = e.metadata.workspaceId;
    switch (e.type) {
      case 'EmailRecipientDelivered':
        count(ws, e.data.stream, e.data.at, { sent: 1, bounced: 0, complained: 0 });
        break;
      case 'EmailRecipientBounced':
        count(ws, e.data.stream, e.data.at, {
          sent: sentBy(e.data),
          bounced: e.data.bounce === 'hard' ? 1 : 0,
          complained: 0,
        });
        break;
      case 'EmailRecipientComplained':
        count(ws, e.data.stream, e.data.at, { sent: 0, bounced: 0, complained: 1 });
        break;
      case 'SendingStreamPaused':
      case 'SendingStreamResumed':
        // The counts before it are the resume's baseline: they are written first.
        await flush(db, deltas, today);
        deltas.clear();
        await lane(db, e);
        break;
    }
  }
  await flush(db, deltas, today);
}

async function lane(db: Db, e: Extract<Event, { type: 'SendingStreamPaused' | 'SendingStreamResumed' }>) {
  const ws = e.metadata.workspaceId;
  const id = laneId(ws, e.data.stream);
  if (e.type === 'SendingStreamPaused') {
    await sql`INSERT INTO sending_lane_guard (id, workspace_id, stream, paused) VALUES (${id}, ${ws}, ${e.data.stream}, true)
      ON CONFLICT (id) DO UPDATE SET paused = true, trip = NULL, enqueued_at = NULL`.execute(db);
    return;
  }
  const day = dayOf(e.data.resumedAt);
  await sql`INSERT INTO sending_lane_guard (id, workspace_id, stream, paused, since_day, base_sent, base_bounced, base_complained)
    SELECT ${id}, ${ws}, ${e.data.stream}, false, ${day}::date, coalesce(d.sent, 0), coalesce(d.bounced, 0), coalesce(d.complained, 0)
    FROM (SELECT 1) one LEFT JOIN sending_lane_guard_days d ON d.workspace_id = ${ws} AND d.stream = ${e.data.stream} AND d.day = ${day}::date
    ON CONFLICT (id) DO UPDATE SET paused = false, trip = NULL, enqueued_at = NULL, since_day = excluded.since_day,
      base_sent = excluded.base_sent, base_bounced = excluded.base_bounced, base_complained = excluded.base_complained`.execute(
    db,
  );
}

async function flush(db: Db, deltas: Map<string, Delta>, today: string): Promise<void> {
  if (deltas.size === 0) return;
  const rows = [...deltas.values()];
  const col = <K extends keyof Delta>(k: K) => rows.map((r) => r[k]);
  await sql`INSERT INTO sending_lane_guard_days (workspace_id, stream, day, sent, bounced, complained)
    SELECT * FROM unnest(${col('workspaceId')}::text[], ${col('stream')}::text[], ${col('day')}::date[],
                         ${col('sent')}::int[], ${col('bounced')}::int[], ${col('complained')}::int[])
    ON CONFLICT (workspace_id, stream, day) DO UPDATE SET sent = sending_lane_guard_days.sent + excluded.sent,
      bounced = sending_lane_guard_days.bounced + excluded.bounced, complained = sending_lane_guard_days.complained + excluded.complained`.execute(
    db,
  );
  const lanes = [...new Map(rows.map((r) => [laneId(r.workspaceId, r.stream), r])).values()];
  await sql`INSERT INTO sending_lane_guard (id, workspace_id, stream)
    SELECT * FROM unnest(${lanes.map((l) => laneId(l.workspaceId, l.stream))}::text[], ${lanes.map((l) => l.workspaceId)}::text[],
                         ${lanes.map((l) => l.stream)}::text[]) ON CONFLICT (id) DO NOTHING`.execute(db);
  // The window ends on the latest day the batch counted: the log's time, so a replay decides alike.
  const from = daysBefore(today, LANE_THRESHOLDS.windowDays - 1);
  const { rows: windows } = await sql<{ id: string } & LaneCounts>`
    SELECT g.id,
      (coalesce(sum(d.sent), 0) - CASE WHEN g.since_day >= ${from}::date THEN g.base_sent ELSE 0 END)::int AS sent,
      (coalesce(sum(d.bounced), 0) - CASE WHEN g.since_day >= ${from}::date THEN g.base_bounced ELSE 0 END)::int AS bounced,
      (coalesce(sum(d.complained), 0) - CASE WHEN g.since_day >= ${from}::date THEN g.base_complained ELSE 0 END)::int AS complained
    FROM sending_lane_guard g
    LEFT JOIN sending_lane_guard_days d ON d.workspace_id = g.workspace_id AND d.stream = g.stream
      AND d.day >= greatest(${from}::date, coalesce(g.since_day, ${from}::date))
    WHERE g.id = ANY(${lanes.map((l) => laneId(l.workspaceId, l.stream))}::text[]) AND NOT g.paused AND g.trip IS NULL
    GROUP BY g.id`.execute(db);
  for (const w of windows) {
    const trip = tripOf(w);
    if (!trip) continue;
    await sql`UPDATE sending_lane_guard SET trip = ${JSON.stringify({ ...trip, sent: w.sent, bounced: w.bounced, complained: w.complained })}::jsonb
      WHERE id = ${w.id}`.execute(db);
  }
}
