import type pg from 'pg';
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { EventInPlace, EventStore, RecordedEvent } from '../infra/eventstore/port.ts';
import type { BulkLoad, ProjectedEvent, Projector } from './projector.ts';

/**
 * Events per read and per write transaction. Larger batches save round trips but keep more
 * decoded events alive at once, and Node's garbage collector then costs more than they save
 * (20,000 a batch took 1.5 s more of collection per million events than 2,000).
 */
const BATCH = 2_000;

/** What turns a stored event into the one a projector is handed: the runner (upcast, validated). */
export interface EventDecoder {
  decode(event: RecordedEvent): ProjectedEvent;
}

export interface RebuildResult {
  name: string;
  events: number;
  position: number;
  seconds: number;
}

/**
 * Rebuilds a read model from position 0 into a scratch schema while the live one keeps serving,
 * then swaps the tables in. The swap holds the projector's checkpoint row, which the live
 * projector takes first in each batch, so the live one pauses for the swap and resumes on the new
 * tables from exactly where the rebuilt copy stands.
 */
export async function rebuildProjection(
  db: Kysely<unknown>,
  pool: pg.Pool,
  store: EventStore,
  runner: EventDecoder,
  projector: Projector,
  options: {
    swap?: boolean;
    schema?: string;
    /**
     * No live follower runs this projector (the runner catching it up in bulk): load up to the
     * head, and in the swap move its checkpoint from `from` (where it must still stand) to where
     * the rebuilt tables do.
     */
    takeOver?: { from: number };
  } = {},
): Promise<RebuildResult> {
  const started = process.hrtime.bigint();
  const schema = options.schema ?? `rebuild_${projector.name.replace(/\W/g, '_')}`;
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  // Never pass the live checkpoint: the live projector resumes from it on the swapped tables.
  const { rows: cp } = await pool.query('SELECT position FROM projection_checkpoints WHERE name = $1', [
    projector.name,
  ]);
  const toHead = options.swap === false || options.takeOver !== undefined;
  const until = toHead ? await store.headPosition() : Number(cp[0]?.position ?? 0);
  // Up to there the projector's bulk replay (when it has one) loads bare tables in place; the
  // events after that are applied as the live projector applies them, keys and indexes built.
  const inPlace = await replayableInPlace(db, store, projector, until);
  await pool.query(inPlace ? inPlace.bulk.ddl(schema) : projector.ddl(schema));
  const scoped = db.withSchema(schema);
  // Raw SQL in a projector names tables unqualified: point it at the scratch schema too.
  const inSchema = (fn: (trx: Kysely<unknown>) => Promise<unknown>) =>
    scoped.transaction().execute(async (trx) => {
      await sql.raw(`SET LOCAL synchronous_commit = off; SET LOCAL search_path TO ${schema}, public`).execute(trx);
      await fn(trx);
    });
  let position = 0;
  let applied = 0;
  const catchUp = async (until: number) => {
    // Batch N is decoded while batch N - 1 is written (and the store reads N + 1 meanwhile);
    // batches still commit one after another, in order, each in its own short transaction.
    let writing: Promise<unknown> = Promise.resolve();
    for await (const events of read(store, projector.handles, position, until)) {
      const decoded = events.map((e) => runner.decode(e));
      await writing;
      writing = inSchema((trx) => projector.applyBatch(trx, decoded));
      // Its failure is awaited (and thrown) above or below; until then it must not count as unhandled.
      writing.catch(() => {});
      applied += decoded.length;
    }
    await writing;
    position = Math.max(position, until);
  };
  if (inPlace) {
    await replayInPlace(inPlace, until, inSchema);
    applied = inPlace.events;
    position = until;
  } else await catchUp(until);
  await buildIndexes(pool, `${projector.indexes?.(schema) ?? ''}\n${inPlace?.bulk.keys(schema) ?? ''}`);
  if (inPlace) await pool.query(inPlace.bulk.finish(schema));
  if (options.swap === false) {
    return {
      name: projector.name,
      events: applied,
      position,
      seconds: Number(process.hrtime.bigint() - started) / 1e9,
    };
  }
  await db.transaction().execute(async (trx) => {
    const { rows } = await sql<{ position: number }>`
      SELECT position FROM projection_checkpoints WHERE name = ${projector.name} FOR UPDATE`.execute(trx);
    const live = Number(rows[0]?.position ?? 0);
    if (options.takeOver && live !== options.takeOver.from)
      throw new Error(`projection ${projector.name} moved on while it was rebuilt: another process projects it`);
    const to = options.takeOver ? Math.max(until, await store.headPosition()) : live;
    await catchUp(to);
    for (const t of projector.tables) {
      await sql.raw(`DROP TABLE public.${t} CASCADE; ALTER TABLE ${schema}.${t} SET SCHEMA public`).execute(trx);
    }
    await sql.raw(`DROP SCHEMA ${schema}`).execute(trx);
    if (options.takeOver)
      await sql`UPDATE projection_checkpoints SET position = ${to}, updated_at = now() WHERE name = ${projector.name}`.execute(
        trx,
      );
    position = to;
  });
  return { name: projector.name, events: applied, position, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/**
 * Positions per statement of a replay in place. Each stretch commits on its own, briefly: a
 * writing transaction holds back the snapshot horizon below which the live subscribers read, so
 * one statement over the whole log would stall every live projector for as long as it ran.
 */
const STRETCH = 25_000;

interface InPlace {
  bulk: BulkLoad;
  events: number;
  relation(after: number, until: number): RawBuilder<EventInPlace>;
}

/**
 * The projector's bulk replay, when it has one, the store can show its log in place, and every
 * event up to `until` is stored in a version the replay reads; with the count of those events.
 */
async function replayableInPlace(
  db: Kysely<unknown>,
  store: EventStore,
  projector: Projector,
  until: number,
): Promise<InPlace | null> {
  const bulk = projector.bulkLoad;
  if (!bulk || !store.eventsInPlace) return null;
  const types = projector.handles;
  const relation = (after: number, until: number) => store.eventsInPlace!({ after, until, types });
  const { rows } = await sql<{ events: string; other: string }>`
    SELECT count(*) AS events,
           count(*) FILTER (WHERE e.version IS DISTINCT FROM (${JSON.stringify(bulk.versions)}::jsonb ->> e.type)::int) AS other
    FROM ${relation(0, until)} e`.execute(db);
  if (Number(rows[0]!.other) > 0) return null;
  return { bulk, events: Number(rows[0]!.events), relation };
}

/** `prepare` over every stretch up to `until`, then `load` over every stretch, two at a time. */
async function replayInPlace(
  { bulk, relation }: InPlace,
  until: number,
  inSchema: (fn: (trx: Kysely<unknown>) => Promise<unknown>) => Promise<void>,
): Promise<void> {
  const stretches: [number, number][] = [];
  for (let after = 0; after < until; after += STRETCH) stretches.push([after, Math.min(until, after + STRETCH)]);
  const each = (statement: (events: RawBuilder<EventInPlace>) => RawBuilder<unknown>) =>
    twoAtATime(stretches, ([after, end]) => inSchema((trx) => statement(relation(after, end)).execute(trx)));
  if (bulk.prepare) await each(bulk.prepare);
  await each(bulk.load);
}

/** Runs `work` on every item, two at a time, in order of the items; the first failure rejects. */
async function twoAtATime<T>(items: readonly T[], work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all([worker(), worker()]);
}

/** The projector's events in (after, until], in batches: the store's bulk read when it has one. */
async function* read(
  store: EventStore,
  types: readonly string[],
  after: number,
  until: number,
): AsyncGenerator<RecordedEvent[]> {
  if (after >= until) return;
  if (store.scanAll) {
    yield* store.scanAll({ after, until, types, batchSize: BATCH });
    return;
  }
  for (let position = after; position < until; ) {
    const events = await store.readAll({ after: position, limit: BATCH });
    if (events.length === 0) return;
    const inRange = events.filter((e) => e.position <= until);
    const relevant = inRange.filter((e) => types.includes(e.type));
    if (relevant.length > 0) yield relevant;
    if (inRange.length < events.length) return;
    position = events[events.length - 1]!.position;
  }
}

/**
 * Index builds two at a time (the statements end at a `;` that ends a line): PostgreSQL never
 * builds a GIN index in parallel, so on two cores the btrees are built beside it. Each build may
 * sort in 256 MB instead of the default 64 MB: a million rows then sort in memory, and a trigram
 * index takes a fifth less time. `SET LOCAL` holds for the one string's implicit transaction.
 */
async function buildIndexes(pool: pg.Pool, ddl: string): Promise<void> {
  const statements = ddl
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  await twoAtATime(statements, (statement) => pool.query(`SET LOCAL maintenance_work_mem = '256MB'; ${statement}`));
}
