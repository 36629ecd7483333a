import type pg from 'pg';
import { sql, type Kysely } from 'kysely';
import type { EventStore, RecordedEvent } from '../infra/eventstore/port.ts';
import type { ProjectionRunner } from './runner.ts';
import type { ProjectedEvent, Projector } from './projector.ts';

/**
 * Events per read and per write transaction. Larger batches save round trips but keep more
 * decoded events alive at once, and Node's garbage collector then costs more than they save
 * (20,000 a batch took 1.5 s more of collection per million events than 2,000).
 */
const BATCH = 2_000;

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
  runner: ProjectionRunner,
  projector: Projector,
  options: { swap?: boolean; schema?: string } = {},
): Promise<RebuildResult> {
  const started = process.hrtime.bigint();
  const schema = options.schema ?? `rebuild_${projector.name.replace(/\W/g, '_')}`;
  await pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`);
  // Up to the live checkpoint the projector's bulk replay (when it has one) loads bare tables;
  // the events after that are applied as the live projector applies them, keys and indexes built.
  let bulk = projector.bulkLoad?.();
  await pool.query(bulk ? bulk.ddl(schema) : projector.ddl(schema));
  const scoped = db.withSchema(schema);
  let position = 0;
  let applied = 0;
  const write = (events: ProjectedEvent[]) =>
    scoped.transaction().execute(async (trx) => {
      // Raw SQL in a projector names tables unqualified: point it at the scratch schema too.
      await sql.raw(`SET LOCAL synchronous_commit = off; SET LOCAL search_path TO ${schema}, public`).execute(trx);
      if (bulk) await bulk.load(trx, events);
      else await projector.applyBatch(trx, events);
    });
  const catchUp = async (until: number) => {
    // Batch N is decoded while batch N - 1 is written (and the store reads N + 1 meanwhile);
    // batches still commit one after another, in order, each in its own short transaction.
    let writing: Promise<unknown> = Promise.resolve();
    for await (const events of read(store, projector.handles, position, until)) {
      const decoded = events.map((e) => runner.decode(e));
      await writing;
      writing = write(decoded);
      // Its failure is awaited (and thrown) above or below; until then it must not count as unhandled.
      writing.catch(() => {});
      applied += decoded.length;
    }
    await writing;
    position = Math.max(position, until);
  };
  // Never pass the live checkpoint: the live projector resumes from it on the swapped tables.
  const { rows: cp } = await pool.query('SELECT position FROM projection_checkpoints WHERE name = $1', [
    projector.name,
  ]);
  await catchUp(options.swap === false ? await store.headPosition() : Number(cp[0]?.position ?? 0));
  if (bulk) await pool.query(bulk.finish(schema));
  bulk = undefined;
  if (projector.indexes) await buildIndexes(pool, projector.indexes(schema));
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
    await catchUp(live);
    for (const t of projector.tables) {
      await sql.raw(`DROP TABLE public.${t} CASCADE; ALTER TABLE ${schema}.${t} SET SCHEMA public`).execute(trx);
    }
    await sql.raw(`DROP SCHEMA ${schema}`).execute(trx);
    position = live;
  });
  return { name: projector.name, events: applied, position, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
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
 * index takes a fifth less time.
 */
async function buildIndexes(pool: pg.Pool, ddl: string): Promise<void> {
  const statements = ddl
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  let next = 0;
  const builder = async () => {
    const client = await pool.connect();
    try {
      await client.query(`SET maintenance_work_mem = '256MB'`);
      while (next < statements.length) await client.query(statements[next++]!);
    } finally {
      // A connection that cannot reset is dropped rather than returned to the pool.
      client.release(
        await client.query('RESET maintenance_work_mem').then(
          () => undefined,
          (error: Error) => error,
        ),
      );
    }
  };
  await Promise.all([builder(), builder()]);
}
