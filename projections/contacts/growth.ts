import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { AudienceRow } from './queries.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

export type Grain = 'minute' | 'hour' | 'day';

const FORMAT: Record<Grain, string> = {
  day: 'YYYY-MM-DD',
  hour: 'YYYY-MM-DD"T"HH24',
  minute: 'YYYY-MM-DD"T"HH24:MI',
};

export interface GrowthBucket {
  key: string;
  subscribed: number;
  unsubscribed: number;
  added: number;
}

export interface AudienceGrowth {
  audienceId: string;
  name: string;
  builtin: 'default' | null;
  total: number;
  before: number;
  added: number;
  subscribed: number;
  unsubscribed: number;
  buckets: GrowthBucket[];
}

export interface Growth {
  audiences: AudienceGrowth[];
  totals: {
    contacts: number;
    memberships: number;
    subscribed: number;
    unsubscribed: number;
    busiest: string | null;
  };
  since: string;
  until: string;
}

export interface GrowthWindow {
  since: Date;
  until: Date;
  grain: Grain;
  offsetMinutes: number;
  /** Tests: count from the rows alone. */
  rowsOnly?: boolean;
}

/**
 * Growth of audiences over [since, until), from the membership history: a join is `subscribed`,
 * a leave (taken out, or the contact deleted) is `unsubscribed`, `added` is the net change. The
 * live count of each audience is one row; the window's joins and leaves (and any after `until`)
 * are index range scans, so the cost follows the window's activity, not the audience's size:
 * total = live − joins after until + leaves after until; before = total − joins + leaves. Whole
 * days and hours inside the window come from `audience_member_days`/`_hours` when the buckets allow.
 */
export async function audienceGrowth(db: Db, audiences: AudienceRow[], window: GrowthWindow): Promise<Growth> {
  const ids = audiences.map((a) => a.id);
  const byAudience = new Map<string, Change[]>(ids.map((id) => [id, []]));
  for (const c of ids.length === 0 ? [] : await changesOf(db, ids, window)) byAudience.get(c.audience_id)!.push(c);
  const result = audiences.map((row) => growthOf(row, byAudience.get(row.id)!));
  return {
    audiences: result,
    totals: {
      contacts: await contactsIn(db, audiences, result, window.until),
      memberships: result.reduce((n, a) => n + a.total, 0),
      subscribed: result.reduce((n, a) => n + a.subscribed, 0),
      unsubscribed: result.reduce((n, a) => n + a.unsubscribed, 0),
      busiest: busiestOf(result),
    },
    since: window.since.toISOString(),
    until: window.until.toISOString(),
  };
}

/** Joins or leaves of an audience in one bucket (`key`), or after `until` (key null). */
interface Change {
  audience_id: string;
  key: string | null;
  kind: 'join' | 'leave';
  n: number;
}

/** [from, to): to null is open-ended. */
type Range = [Date, Date | null];

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Where each part of the window is counted from. Whole UTC days (day grain, no offset) and whole
 * UTC hours (hour or day grain, an offset of whole hours) inside the window are added up from the
 * daily and hourly counts; rows are read only for the partial hours at the two ends (and after `until`).
 */
function sourcesOf({ since, until, grain, offsetMinutes, rowsOnly }: GrowthWindow): {
  rows: Range[];
  hours: Range[];
  days: Range[];
} {
  const ceil = (d: Date, unit: number) => new Date(Math.ceil(d.getTime() / unit) * unit);
  const floor = (d: Date, unit: number) => new Date(Math.floor(d.getTime() / unit) * unit);
  const [hoursFrom, hoursTo] = [ceil(since, HOUR), floor(until, HOUR)];
  const [daysFrom, daysTo] = [ceil(since, DAY), floor(until, DAY)];
  const useHours = !rowsOnly && grain !== 'minute' && offsetMinutes % 60 === 0 && hoursFrom < hoursTo;
  const useDays = useHours && grain === 'day' && offsetMinutes === 0 && daysFrom < daysTo;
  return {
    rows: useHours
      ? [
          [since, hoursFrom],
          [hoursTo, null],
        ]
      : [[since, null]],
    hours: !useHours
      ? []
      : useDays
        ? [
            [hoursFrom, daysFrom],
            [daysTo, hoursTo],
          ]
        : [[hoursFrom, hoursTo]],
    days: useDays ? [[daysFrom, daysTo]] : [],
  };
}

/** The joins and leaves of the audiences per bucket of the window, and after it, in one statement. */
async function changesOf(db: Db, ids: string[], window: GrowthWindow): Promise<Change[]> {
  const { until, grain, offsetMinutes } = window;
  const sources = sourcesOf(window);
  const local = (expr: RawBuilder<unknown>) =>
    sql`to_char(date_trunc(${grain}, ${expr} + make_interval(mins => ${offsetMinutes})), ${FORMAT[grain]})`;
  const bucket = (column: string) =>
    sql`CASE WHEN ${sql.ref(column)} < ${until} THEN ${local(sql`(${sql.ref(column)} AT TIME ZONE 'UTC')`)} END`;
  const within = (column: RawBuilder<unknown>, ranges: Range[]) =>
    sql.join(
      ranges.map(([from, to]) =>
        to === null ? sql`${column} >= ${from}` : sql`(${column} >= ${from} AND ${column} < ${to})`,
      ),
      sql` OR `,
    );
  const utc = (d: Date) => d.toISOString().slice(0, 19).replace('T', ' ');
  const counted = (table: 'audience_member_hours' | 'audience_member_days', ranges: Range[]) => {
    const at = sql.ref(table === 'audience_member_hours' ? 'hour' : 'day');
    const inRanges = sql.join(
      ranges.map(([from, to]) => sql`(${at} >= ${utc(from)}::timestamp AND ${at} < ${utc(to!)}::timestamp)`),
      sql` OR `,
    );
    return sql`
      UNION ALL SELECT audience_id, ${local(sql`${at}`)} AS key, 'join' AS kind, sum(joins)::int AS n
        FROM ${sql.table(table)} WHERE audience_id = ANY(${ids}) AND (${inRanges}) GROUP BY 1, 2 HAVING sum(joins) > 0
      UNION ALL SELECT audience_id, ${local(sql`${at}`)} AS key, 'leave' AS kind, sum(leaves)::int AS n
        FROM ${sql.table(table)} WHERE audience_id = ANY(${ids}) AND (${inRanges}) GROUP BY 1, 2 HAVING sum(leaves) > 0`;
  };
  const { rows } = await sql<Change>`
    SELECT audience_id, ${bucket('joined_at')} AS key, 'join' AS kind, count(*)::int AS n
      FROM audience_members WHERE audience_id = ANY(${ids}) AND (${within(sql.ref('joined_at'), sources.rows)}) GROUP BY 1, 2
    UNION ALL
    SELECT audience_id, ${bucket('left_at')} AS key, 'leave' AS kind, count(*)::int AS n
      FROM audience_members WHERE audience_id = ANY(${ids}) AND (${within(sql.ref('left_at'), sources.rows)}) GROUP BY 1, 2
    ${sources.hours.length > 0 ? counted('audience_member_hours', sources.hours) : sql``}
    ${sources.days.length > 0 ? counted('audience_member_days', sources.days) : sql``}`.execute(db);
  return rows;
}

/** One audience's growth from its live count and its changes. */
function growthOf(row: AudienceRow, changes: Change[]): AudienceGrowth {
  let after = 0;
  const byKey = new Map<string, GrowthBucket>();
  for (const c of changes) {
    if (c.key === null) {
      // After `until`: only the rows say so (the hourly and daily counts stop before it).
      after += c.kind === 'join' ? -c.n : c.n;
      continue;
    }
    const b = byKey.get(c.key) ?? { key: c.key, subscribed: 0, unsubscribed: 0, added: 0 };
    if (c.kind === 'join') b.subscribed += c.n;
    else b.unsubscribed += c.n;
    b.added = b.subscribed - b.unsubscribed;
    byKey.set(c.key, b);
  }
  const buckets = [...byKey.values()].sort((x, y) => (x.key < y.key ? -1 : 1));
  const subscribed = buckets.reduce((n, b) => n + b.subscribed, 0);
  const unsubscribed = buckets.reduce((n, b) => n + b.unsubscribed, 0);
  const total = row.member_count + after;
  return {
    audienceId: row.id,
    name: row.name,
    builtin: row.builtin,
    total,
    before: total - subscribed + unsubscribed,
    added: subscribed - unsubscribed,
    subscribed,
    unsubscribed,
    buckets,
  };
}

/** The bucket with the most joins and leaves over all the audiences; the earliest of equals. */
function busiestOf(audiences: AudienceGrowth[]): string | null {
  const busiest = new Map<string, number>();
  for (const a of audiences)
    for (const b of a.buckets) busiest.set(b.key, (busiest.get(b.key) ?? 0) + b.subscribed + b.unsubscribed);
  let top: string | null = null;
  for (const [key, n] of [...busiest.entries()].sort((x, y) => (x[0] < y[0] ? -1 : 1)))
    if (top === null || n > busiest.get(top)!) top = key;
  return top;
}

/**
 * Each person once: the default audience holds every contact, so with it selected its total is
 * the answer, as is the total of a single audience. Otherwise the contacts in the selection now
 * are a sum over `audience_set_counts` (one row per distinct set of custom audiences contacts are
 * in, a few rows however many contacts), taken back to `until` by the contacts who joined or left
 * a selected audience at or after it (index range scans, as for the totals): each is counted as
 * the rows say it stood at `until` instead of now. One statement, so the sets and rows agree.
 */
async function contactsIn(db: Db, audiences: AudienceRow[], result: AudienceGrowth[], until: Date): Promise<number> {
  const withDefault = result.find((a) => a.builtin === 'default');
  if (withDefault) return withDefault.total;
  if (result.length <= 1) return result.length === 1 ? result[0]!.total : 0;
  const ids = audiences.map((a) => a.id);
  const { rows } = await sql<{ n: number }>`
    WITH moved AS (
      SELECT contact_id FROM audience_members WHERE audience_id = ANY(${ids}) AND joined_at >= ${until}
      UNION
      SELECT contact_id FROM audience_members WHERE audience_id = ANY(${ids}) AND left_at >= ${until}
    ), changed AS (
      SELECT bool_or(m.joined_at < ${until} AND (m.left_at IS NULL OR m.left_at >= ${until})) AS was_in, bool_or(m.left_at IS NULL) AS is_in
      FROM moved JOIN audience_members m ON m.contact_id = moved.contact_id AND m.audience_id = ANY(${ids})
      GROUP BY moved.contact_id
    )
    SELECT (
      (SELECT coalesce(sum(contacts), 0) FROM audience_set_counts WHERE workspace_id = ${audiences[0]!.workspace_id} AND audience_ids && ${ids}::text[])
      + (SELECT count(*) FILTER (WHERE was_in AND NOT is_in) - count(*) FILTER (WHERE is_in AND NOT was_in) FROM changed)
    )::int AS n`.execute(db);
  return rows[0]!.n;
}
