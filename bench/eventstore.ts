import crypto from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../infra/db.ts';
import { WrongExpectedRevision } from '../infra/eventstore/port.ts';
import { PostgresEventStore, UnstorableAppend } from '../infra/eventstore/postgres.ts';
import { concurrently, emit, freshDatabase, msSince, note, round, Samples } from './support.ts';

const EVENTS = 50_000;
const WRITERS = 32;
/** Each writer owns its streams, so it always knows their revision and a conflict means a bug. */
const STREAMS_PER_WRITER = 100;
/** The service's own pool size (openSystem's default); both stores get the same. */
const POOL_SIZE = 20;

interface Impl {
  name: string;
  /** Appends one event expecting `count` events already in the stream (0: a new stream). */
  append(
    stream: string,
    count: number,
    data: Record<string, unknown>,
    metadata: Record<string, unknown>,
  ): Promise<void>;
  isConflict(error: unknown): boolean;
  /** The append's data was refused (a NUL in its JSON): by the adapter, or by PostgreSQL. */
  isRefused(error: unknown): boolean;
  close(): Promise<void>;
}

async function ours(url: string): Promise<Impl> {
  const database = openDatabase(url, POOL_SIZE);
  await PostgresEventStore.migrate(database.pool);
  const store = new PostgresEventStore(database.pool);
  return {
    name: 'ours',
    append: async (stream, count, data, metadata) => {
      await store.append(
        stream,
        [{ type: 'BenchEventHappened', version: 1, data, metadata }],
        count === 0 ? 'no_stream' : count - 1,
      );
    },
    isConflict: (e) => e instanceof WrongExpectedRevision,
    isRefused: (e) => e instanceof UnstorableAppend,
    close: () => database.close(),
  };
}

/**
 * Emmett's dumbo sets process-wide pg type parsers (int8 as BigInt, its own JSON) when its store is
 * made; they are put back afterwards so the rest of the run sees the service's parsers.
 */
async function emmett(url: string): Promise<Impl> {
  const saved = [20, 114, 3802].map((oid) => [oid, pg.types.getTypeParser(oid, 'text')] as const);
  const { getPostgreSQLEventStore } = await import('@event-driven-io/emmett-postgresql');
  const { isExpectedVersionConflictError } = await import('@event-driven-io/emmett');
  const pool = new pg.Pool({ connectionString: url, max: POOL_SIZE });
  pool.on('error', () => {});
  const store = getPostgreSQLEventStore(url, { connectionOptions: { connectionString: url, pool } });
  await store.schema.migrate();
  return {
    name: 'emmett-postgresql',
    append: async (stream, count, data, metadata) => {
      await store.appendToStream(stream, [{ type: 'BenchEventHappened', data, metadata }], {
        expectedStreamVersion: BigInt(count),
      });
    },
    isConflict: (e) => isExpectedVersionConflictError(e),
    isRefused: (e) => String((e as { code?: unknown } | null)?.code ?? '').startsWith('22'),
    close: async () => {
      await store.close();
      await pool.end();
      for (const [oid, parser] of saved) pg.types.setTypeParser(oid, parser);
    },
  };
}

interface Result {
  impl: string;
  eventsPerSec: number;
  p50Ms: number;
  p99Ms: number;
  seconds: number;
}

/**
 * `refuseEvery`: every n-th append carries a NUL in its JSON, which PostgreSQL cannot store; it must
 * fail alone, and the figure says what that costs the others.
 */
async function measure(open: (url: string) => Promise<Impl>, label: string, refuseEvery = 0): Promise<Result> {
  const database = await freshDatabase(`es_${label}`);
  const impl = await open(database.url);
  try {
    const payload = (i: number) => ({
      suppressionId: crypto.randomUUID(),
      email: `user${i}@example${i % 97}.test`,
      reason: 'manual',
      detail: null,
      removable: true,
      createdAt: new Date().toISOString(),
      ...(refuseEvery > 0 && i % refuseEvery === refuseEvery - 1 ? { detail: 'nul \u0000' } : {}),
    });
    const metadata = { workspaceId: 'ws_bench', actor: { kind: 'system', id: null }, requestId: null };
    // Warm-up, not timed: one append per writer on streams of their own opens the pool's connections.
    await impl.append('ws-bench.warmup-first', 0, payload(-1), metadata);
    await concurrently(WRITERS, (w) => impl.append(`ws-bench.warmup-${w}`, 0, payload(-1), metadata));

    const counts = Array.from({ length: WRITERS }, () => new Uint32Array(STREAMS_PER_WRITER));
    const next = new Uint32Array(WRITERS);
    const samples = new Samples(EVENTS);
    let issued = 0;
    let conflicts = 0;
    let refused = 0;
    note(
      `eventstore: ${impl.name}: ${EVENTS} appends, ${WRITERS} writers, ${WRITERS * STREAMS_PER_WRITER} streams, pool ${POOL_SIZE}`,
    );
    const started = process.hrtime.bigint();
    await concurrently(WRITERS, async (w) => {
      while (issued < EVENTS) {
        const i = issued++;
        const s = next[w]!;
        next[w] = (s + 1) % STREAMS_PER_WRITER;
        const count = counts[w]![s]!;
        const t0 = process.hrtime.bigint();
        try {
          await impl.append(`ws-bench.item-${w}-${s}`, count, payload(i), metadata);
          counts[w]![s] = count + 1;
        } catch (error) {
          if (impl.isRefused(error)) refused++;
          else if (impl.isConflict(error)) conflicts++;
          else throw error;
        }
        samples.add(msSince(t0));
      }
    });
    const seconds = msSince(started) / 1000;
    if (conflicts > 0) note(`eventstore: ${impl.name}: ${conflicts} unexpected conflicts`);
    const expectedRefusals = refuseEvery > 0 ? Math.floor(EVENTS / refuseEvery) : 0;
    if (refused !== expectedRefusals)
      throw new Error(`${impl.name}: ${refused} appends refused, ${expectedRefusals} carried a NUL`);
    const [p50, p99] = samples.percentiles();
    const result = {
      impl: impl.name,
      eventsPerSec: round(EVENTS / seconds),
      p50Ms: p50!,
      p99Ms: p99!,
      seconds: round(seconds, 2),
    };
    await emit({
      bench: refuseEvery > 0 ? 'eventstore.append-with-refusals' : 'eventstore.append',
      ...result,
      ...(refuseEvery > 0 ? { refused, refuseEvery } : {}),
      events: EVENTS,
      writers: WRITERS,
      streams: WRITERS * STREAMS_PER_WRITER,
      poolSize: POOL_SIZE,
      conflicts,
      target: '>= 5000 events/s',
    });
    return result;
  } finally {
    await impl.close();
    await database.drop();
  }
}

export async function eventstoreBench(): Promise<void> {
  const a = await measure(ours, 'ours');
  await measure(ours, 'ours_refusals', 1000);
  const b = await measure(emmett, 'emmett');
  await emit({
    bench: 'eventstore.compare',
    impls: [a.impl, b.impl],
    eventsPerSec: [a.eventsPerSec, b.eventsPerSec],
    p99Ms: [a.p99Ms, b.p99Ms],
    oursToEmmettThroughput: round(a.eventsPerSec / b.eventsPerSec, 2),
    note: 'ours: es_append calls, at most two in flight, each carrying every append queued behind them (autocommit); emmett: BEGIN, emt_append_to_stream, COMMIT per append',
  });
}
