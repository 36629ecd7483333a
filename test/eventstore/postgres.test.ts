import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import { WrongExpectedRevision } from '../../infra/eventstore/port.ts';
import { LogTail } from '../../infra/eventstore/postgres-tail.ts';
import { PostgresEventStore, UnstorableAppend } from '../../infra/eventstore/postgres.ts';
import { openPool } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';
import { eventStoreContract } from './contract.ts';

// A bare pool, without infra/db.ts's global bigint parser: positions must be numbers regardless.
const pool = openPool({ connectionString: await freshDatabase(t), max: 10 });
pool.on('error', () => {});
t.teardown(() => pool.end());
await PostgresEventStore.migrate(pool);

t.test('an empty store has head position 0 and nothing to read', async (t) => {
  const store = new PostgresEventStore(pool);
  t.equal(await store.headPosition(), 0);
  t.strictSame(await store.readAll(), []);
});

await eventStoreContract(t, 'PostgreSQL event store', async () => {
  const store = new PostgresEventStore(pool);
  return { store, cleanup: () => store.close() };
});

const event = (n: number) => ({ type: 'BatchTested', version: 1, data: { n } });

t.test('appendMany sends a page of new streams together: one call, one transaction', async (t) => {
  const store = new PostgresEventStore(pool);
  t.teardown(() => store.close());
  // Appended one by one, the first two would each go out alone in a free call.
  const results = await store.appendMany(
    Array.from({ length: 300 }, (_, i) => ({
      streamId: `many-${i}`,
      events: [event(i)],
      expected: 'no_stream' as const,
    })),
  );
  t.ok(results.every((r) => r.status === 'fulfilled'));
  const { rows } = await pool.query(
    `SELECT count(*)::int AS events, count(DISTINCT tx_id)::int AS transactions, max(position) - min(position) + 1 AS span
     FROM es_events WHERE stream_id LIKE 'many-%'`,
  );
  t.same(rows[0], { events: 300, transactions: 1, span: '300' }, 'one transaction, consecutive positions');
});

t.test('appends queued behind a call in flight go out together, each with its own expectation', async (t) => {
  const store = new PostgresEventStore(pool, { concurrentAppends: 1 });
  t.teardown(() => store.close());
  await store.append('batch-a', [event(0)], 'no_stream');
  // The first append goes out alone; the other five queue behind it and share one call.
  const results = await Promise.allSettled([
    store.append('batch-b', [event(1)], 'no_stream'),
    store.append('batch-a', [event(2), event(3)], 0),
    store.append('batch-a', [event(4)], 0),
    store.append('batch-a', [event(5)], 2),
    store.append('batch-c', [event(6)], 'exists'),
    store.append('batch-b', [event(7)], 'any'),
  ]);
  t.strictSame(
    results.map((r) => r.status),
    ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'rejected', 'fulfilled'],
  );
  const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected').map((r) => r.reason);
  t.ok(
    refused[0] instanceof WrongExpectedRevision && refused[0].actual === 2,
    'a stale revision sees the batch-mate that went first',
  );
  t.ok(refused[1] instanceof WrongExpectedRevision && refused[1].actual === -1, "'exists' on a missing stream");
  t.strictSame(
    (await store.readStream('batch-a')).map((e) => [e.revision, e.data.n]),
    [
      [0, 0],
      [1, 2],
      [2, 3],
      [3, 5],
    ],
  );
  t.strictSame(
    (await store.readStream('batch-b')).map((e) => [e.revision, e.data.n]),
    [
      [0, 1],
      [1, 7],
    ],
  );
  t.strictSame(await store.readStream('batch-c'), [], 'a refused append writes nothing');
  const positions = (await store.readAll({ after: 0, limit: 100 })).map((e) => e.position);
  t.ok(
    positions.every((p, i) => i === 0 || p > positions[i - 1]!),
    'positions increase across the batch',
  );
  const fulfilled = results.filter(
    (r): r is PromiseFulfilledResult<{ revision: number; position: number }> => r.status === 'fulfilled',
  );
  t.strictSame(
    fulfilled.map((r) => r.value.revision),
    [0, 2, 3, 1],
    'each append gets its own last revision',
  );
});

for (const [bound, options] of [
  ['its events', { tailEvents: 10 }],
  ['its bytes (events of ~600)', { tailBytes: 3_000 }],
] as const)
  t.test(
    `a subscription further behind than the tail remembers (${bound}) catches up from the table, then follows the tail`,
    async (t) => {
      const store = new PostgresEventStore(pool, options);
      t.teardown(() => store.close());
      const start = await store.headPosition();
      // Only this test's streams: the tests before it may still have events that become visible after
      // `start` was read, while a transaction elsewhere on the shared server holds the horizon back.
      const ours = (events: { streamId: string; data: Record<string, unknown> }[]) =>
        events.filter((e) => e.streamId.startsWith('tail-')).map((e) => e.data.n as number);
      const live: number[] = [];
      const liveSubscription = store.subscribeToAll({
        after: start,
        onEvents: async (events) => {
          live.push(...ours(events));
        },
      });
      const padded = (n: number) => ({
        ...event(n),
        data: { n, pad: 'p'.repeat('tailBytes' in options ? 600 : 0) },
      });
      for (let i = 0; i < 60; i++) await store.append(`tail-${i % 7}`, [padded(i)], 'any');
      const late: number[] = [];
      const lateSubscription = store.subscribeToAll({
        after: start,
        batchSize: 8,
        onEvents: async (events) => {
          late.push(...ours(events));
        },
      });
      await Promise.all(Array.from({ length: 20 }, (_, i) => store.append(`tail-${i % 7}`, [padded(60 + i)], 'any')));
      const deadline = Date.now() + 10_000;
      while ((live.length < 80 || late.length < 80) && Date.now() < deadline) await sleep(20);
      await liveSubscription.close();
      await lateSubscription.close();
      const expected = ours(await store.readAll({ after: start, limit: 1000 }));
      t.equal(expected.length, 80);
      t.strictSame(live, expected, 'the live subscription saw every event once, in position order');
      t.strictSame(late, expected, 'so did the one that started 60 events behind');
    },
  );

t.test('the tail keeps at most about its bytes of the newest events', async (t) => {
  const store = new PostgresEventStore(pool);
  t.teardown(() => store.close());
  const start = await store.headPosition();
  for (let i = 0; i < 40; i++)
    await store.append('tail-bytes', [{ ...event(i), data: { n: i, pad: 'q'.repeat(1000) } }], 'any');
  // The tail's own source, read as the store reads it, each event sized as its JSON.
  const tail = new LogTail(
    {
      read: async (after, limit) =>
        (await store.readAll({ after, limit })).map((e) => ({ event: e, bytes: JSON.stringify(e.data).length })),
      head: async () => start,
    },
    50,
    20_000,
    10_000,
  );
  const leave = tail.join();
  t.teardown(leave);
  const last = (await store.readAll({ after: start, limit: 1000 })).at(-1)!.position;
  await tail.waitPast(last - 1, 5_000, new AbortController().signal);
  t.equal(tail.slice(start, 100), null, 'the oldest are no longer in memory');
  const kept = tail.slice(last - 3, 100);
  t.ok(kept && kept.length > 0 && kept.at(-1)!.position === last, 'the newest are');
  const oldestKept = (await store.readAll({ after: start, limit: 1000 })).filter(
    (e) => tail.slice(e.position - 1, 1) !== null,
  );
  t.ok(oldestKept.length <= 15, `about 10,000 bytes of 1,000-byte events kept (${oldestKept.length})`);
});

t.test(
  'an append held back by an older open transaction reaches the live subscription without waiting a poll',
  async (t) => {
    // A poll far longer than the hold: the event arriving sooner is the tail reading again soon.
    const store = new PostgresEventStore(pool, { pollMs: 2000 });
    t.teardown(() => store.close());
    const seen: number[] = [];
    const subscription = store.subscribeToAll({
      after: await store.headPosition(),
      onEvents: async (events) => {
        seen.push(...events.filter((e) => e.streamId === 'held-back').map((e) => e.position));
      },
    });
    await sleep(50);
    // A transaction with an id older than the append's keeps the append invisible until it ends.
    const older = await pool.connect();
    await older.query('BEGIN');
    await older.query('SELECT pg_current_xact_id()');
    const { position } = await store.append('held-back', [event(1)], 'no_stream');
    const appendedAt = Date.now();
    await sleep(100);
    await older.query('COMMIT');
    older.release();
    while (seen.length === 0 && Date.now() - appendedAt < 5000) await sleep(5);
    const took = Date.now() - appendedAt;
    await subscription.close();
    t.same(seen, [position]);
    t.ok(took < 1000, `seen ${took} ms after the append, the older transaction ending at 100 ms (poll: 2000 ms)`);
  },
);

/** Twenty appends queued behind one in flight, so they share one call; the tenth holds `bad`. */
async function sharedCall(
  store: PostgresEventStore,
  bad: () => Promise<unknown>,
  tag: string,
): Promise<PromiseSettledResult<unknown>[]> {
  const appends: Promise<unknown>[] = [store.append(`${tag}-first`, [event(0)], 'any')];
  for (let i = 0; i < 20; i++) appends.push(i === 10 ? bad() : store.append(`${tag}-${i}`, [event(i)], 'any'));
  return Promise.allSettled(appends);
}

t.test('an append holding a string PostgreSQL cannot store fails alone, before it joins a call', async (t) => {
  const store = new PostgresEventStore(pool, { concurrentAppends: 1 });
  t.teardown(() => store.close());
  const bad: [string, string, Record<string, unknown>, Record<string, unknown>?][] = [
    ['unstorable-nul', 'UnstorableTested', { s: 'a\u0000b' }],
    ['unstorable-lone', 'UnstorableTested', { s: 'a\ud800b' }],
    ['unstorable-reversed', 'UnstorableTested', { s: '\udc00\ud800' }],
    ['unstorable-key', 'UnstorableTested', { 'k\u0000': 1 }],
    ['unstorable-escaped', 'UnstorableTested', { s: '\\\u0000' }],
    ['unstorable-metadata', 'UnstorableTested', { s: 'fine' }, { requestId: '\ud800' }],
    ['unstorable-stream\u0000', 'UnstorableTested', { s: 'fine' }],
    ['unstorable-type', 'Unstorable\u0000Tested', { s: 'fine' }],
  ];
  for (const [stream, type, data, metadata] of bad) {
    const results = await sharedCall(
      store,
      () => store.append(stream, [{ type, version: 1, data, metadata }], 'any'),
      'unstorable',
    );
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [i] : []));
    t.strictSame(failed, [11], `only the append holding ${JSON.stringify([stream, type, data, metadata])} failed`);
    t.ok((results[11] as PromiseRejectedResult).reason instanceof UnstorableAppend, 'refused by the adapter');
    // A stream id holding NUL cannot even be read; the id without it shows nothing was written either.
    t.strictSame(await store.readStream(stream.replace('\u0000', '')), [], 'and it wrote nothing');
  }
  for (let i = 0; i < 20; i++)
    if (i !== 10)
      t.equal((await store.readStream(`unstorable-${i}`)).length, bad.length, `stream ${i} holds every append`);
  const fine = ['\\u0000 as text', '\ud83d\ude00 a pair', 'tab\tand\u0001'];
  for (const s of fine) await store.append('storable', [{ type: 'StorableTested', version: 1, data: { s } }], 'any');
  t.strictSame(
    (await store.readStream('storable')).map((e) => e.data.s),
    fine,
    'escaped backslashes, whole pairs and other control characters are stored',
  );
});

t.test(
  "an append PostgreSQL refuses in a shared call fails alone: the call's others go again without it",
  async (t) => {
    const store = new PostgresEventStore(pool, { concurrentAppends: 1 });
    t.teardown(() => store.close());
    // A version past the integer column's range: nothing the adapter checks, refused by PostgreSQL (22003).
    const results = await sharedCall(
      store,
      () => store.append('refused-version', [{ type: 'RefusedTested', version: 2 ** 31, data: {} }], 'any'),
      'refused',
    );
    t.strictSame(
      results.flatMap((r, i) => (r.status === 'rejected' ? [i] : [])),
      [11],
      'only the refused append failed',
    );
    t.match(
      (results[11] as PromiseRejectedResult).reason,
      { code: '22003' },
      "PostgreSQL's own refusal reaches its caller",
    );
    t.strictSame(await store.readStream('refused-version'), []);
    for (let i = 0; i < 20; i++)
      if (i !== 10) t.equal((await store.readStream(`refused-${i}`)).length, 1, `stream ${i} holds its append`);
  },
);

t.test(
  'a database of the layout before stream ends were read from the events: migrated, its streams go on where they were',
  async (t) => {
    const old = openPool({ connectionString: await freshDatabase(t), max: 2 });
    t.teardown(() => old.end());
    await PostgresEventStore.migrate(old);
    const store = new PostgresEventStore(old);
    t.teardown(() => store.close());
    await store.append('kept-a', [event(0), event(1)], 'no_stream');
    // What that layout had beside the events: a table of stream ends, the unique constraint and a
    // prefix index in place of the one unique index of (stream_id, revision).
    await old.query(`
      DROP INDEX es_events_stream_revision;
      ALTER TABLE es_events ADD CONSTRAINT es_events_stream_id_revision_key UNIQUE (stream_id, revision);
      CREATE INDEX es_events_stream_prefix ON es_events (stream_id text_pattern_ops);
      CREATE TABLE es_streams (stream_id text PRIMARY KEY, revision integer NOT NULL);
      INSERT INTO es_streams VALUES ('kept-a', 1);`);
    await PostgresEventStore.migrate(old);
    const { rows } = await old.query(
      `SELECT to_regclass('es_streams') AS streams,
              array_agg(indexname::text ORDER BY indexname) AS indexes
       FROM pg_indexes WHERE tablename = 'es_events' AND indexname LIKE 'es_events_stream%'`,
    );
    t.same(
      rows[0],
      { streams: null, indexes: ['es_events_stream_revision'] },
      'the old table, constraint and index gone',
    );
    await t.rejects(store.append('kept-a', [event(2)], 0), WrongExpectedRevision, 'its end is still 1');
    t.match(await store.append('kept-a', [event(2)], 1), { revision: 2 });
    await t.rejects(store.append('kept-a', [event(3)], 'no_stream'), WrongExpectedRevision);
    t.same(
      (await store.readStream('kept-a')).map((e) => e.data),
      [{ n: 0 }, { n: 1 }, { n: 2 }],
    );
  },
);
