import { setTimeout as sleep } from 'node:timers/promises';
import t from 'tap';
import type { EventToAppend, ExpectedRevision, RecordedEvent } from '../../infra/eventstore/port.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { openPool } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';

/**
 * The out-of-order-commit gap: a transaction that took a lower position can commit after one that
 * took a higher position. A subscriber that has moved past the higher one must still get the lower.
 */
// Asynchronous commit halves the runtime; commits still become visible in the order they happen,
// and that order, not durability, is what this file is about.
const pool = openPool({ connectionString: await freshDatabase(t), max: 18, options: '-c synchronous_commit=off' });
pool.on('error', () => {});
t.teardown(() => pool.end());
await PostgresEventStore.migrate(pool);
const store = new PostgresEventStore(pool);

const WRITERS = 8;
const APPENDS_PER_WRITER = 2000;
const STREAMS_PER_WRITER = 40;
const event = (n: number): EventToAppend => ({ type: 'GapTested', version: 1, data: { n } });

t.test('8 concurrent writers: one live subscriber sees every event once, in position order', async (t) => {
  const seen: RecordedEvent[] = [];
  let outOfOrder = 0;
  const subscription = store.subscribeToAll({
    after: 0,
    onEvents: async (events) => {
      for (const e of events) {
        if (seen.length > 0 && e.position <= seen[seen.length - 1]!.position) outOfOrder++;
        seen.push(e);
      }
    },
    onError: (error) => t.fail(String(error)),
  });

  const started = Date.now();
  await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)));
  const total = WRITERS * APPENDS_PER_WRITER;
  t.comment(`${total} appends in ${Date.now() - started} ms`);
  const deadline = Date.now() + 20_000;
  while (seen.length < total && Date.now() < deadline) await sleep(20);
  if (seen.length < total) t.comment(`still held back by: ${JSON.stringify(await oldestTransactions())}`);
  await sleep(200); // anything after the last expected event would be a duplicate
  await subscription.close();

  t.equal(outOfOrder, 0, 'strictly increasing positions');
  t.equal(seen.length, total, 'every event exactly once');
  t.equal(new Set(seen.map((e) => e.position)).size, seen.length, 'no duplicate position');
  const stored = await readEverything();
  t.equal(stored.length, total);
  t.strictSame(
    seen.map((e) => e.position),
    stored.map((e) => e.position),
    'the same events as readAll, in the same order',
  );
  t.ok(revisionsFollowPositions(seen), 'within each stream, revisions arrive 0, 1, 2, ...');
});

t.test('a committed event waits behind an open transaction holding a lower position', async (t) => {
  const before = await store.headPosition();
  const seen: RecordedEvent[] = [];
  const subscription = store.subscribeToAll({
    after: before,
    onEvents: async (events) => {
      seen.push(...events);
    },
  });

  const open = await pool.connect();
  try {
    await open.query('BEGIN');
    const { rows } = await open.query(
      `SELECT out_position FROM es_append(ARRAY['gap-early'], ARRAY['no_stream'], ARRAY[NULL::integer], ARRAY[1], ARRAY['GapTested'], ARRAY[1], '[{"n":1}]'::jsonb, '[{}]'::jsonb)`,
    );
    const early = Number(rows[0].out_position);
    const late = await store.append('gap-late', [event(2)], 'no_stream');
    t.ok(late.position > early, 'the autocommit append took the higher position');
    const committed = await pool.query('SELECT 1 FROM es_events WHERE position = $1', [late.position]);
    t.equal(committed.rowCount, 1, 'and is committed');

    await sleep(300); // several polling rounds of the subscriber
    t.strictSame(await store.readAll({ after: before }), [], 'readAll holds it back');
    t.equal(await store.headPosition(), before, 'headPosition holds it back');
    t.strictSame(seen, [], 'the subscription holds it back');

    await open.query('COMMIT');
    const deadline = Date.now() + 5000;
    while (seen.length < 2 && Date.now() < deadline) await sleep(20);
    t.strictSame(
      seen.map((e) => e.position),
      [early, late.position],
      'both arrive, in position order',
    );
    t.strictSame(
      (await store.readAll({ after: before })).map((e) => e.streamId),
      ['gap-early', 'gap-late'],
    );
  } finally {
    await open.query('ROLLBACK').catch(() => {});
    open.release();
    await subscription.close();
  }
});

t.test('appends racing on one stream reach subscribers in revision order', async (t) => {
  const before = await store.headPosition();
  await Promise.all(
    Array.from({ length: 8 }, async (_, w) => {
      for (let i = 0; i < 50; i++) await store.append('hot', [event(w * 100 + i)], 'any');
    }),
  );
  let events = await readEverything(before);
  const deadline = Date.now() + 5000;
  while (events.length < 400 && Date.now() < deadline) events = await readEverything(before);
  t.equal(events.length, 400);
  t.strictSame(
    events.map((e) => e.revision),
    [...Array(400).keys()],
  );
});

t.test('es_append refuses a transaction that has already written', async (t) => {
  const client = await pool.connect();
  const append = (stream: string) =>
    client.query(
      `SELECT es_append(ARRAY[$1], ARRAY['any'], ARRAY[NULL::integer], ARRAY[1], ARRAY['GapTested'], ARRAY[1], '[{}]'::jsonb, '[{}]'::jsonb)`,
      [stream],
    );
  try {
    await client.query('BEGIN');
    await client.query('CREATE TEMP TABLE scratch (x int)');
    await t.rejects(append('guard-a'), /first write of its transaction/, 'after another write');
    await client.query('ROLLBACK');
    await client.query('BEGIN');
    await append('guard-b');
    await t.rejects(append('guard-b'), /first write of its transaction/, 'a second append');
  } finally {
    await client.query('ROLLBACK');
    client.release();
  }
});

/** One writer's streams: it creates each with no_stream, then extends it at its known revision. */
async function writer(w: number): Promise<void> {
  const revisions: number[] = [];
  for (let i = 0; i < APPENDS_PER_WRITER; i++) {
    const s = (i * 7 + w) % STREAMS_PER_WRITER;
    const known = revisions[s];
    const expected: ExpectedRevision = known === undefined ? 'no_stream' : i % 10 === 0 ? 'any' : known;
    const { revision } = await store.append(`w${w}-s${s}`, [event(i)], expected);
    revisions[s] = revision;
  }
}

async function readEverything(after = 0): Promise<RecordedEvent[]> {
  const events: RecordedEvent[] = [];
  for (;;) {
    const page = await store.readAll({ after: events.at(-1)?.position ?? after, limit: 5000 });
    if (page.length === 0) return events;
    events.push(...page);
  }
}

/**
 * Visibility follows the snapshot xmin, which any transaction anywhere on the server holds back
 * (other databases included), so a timed-out wait names the oldest ones.
 */
async function oldestTransactions(): Promise<unknown[]> {
  const { rows } = await pool.query(
    `SELECT pid, datname, state, xact_start, left(query, 80) AS query FROM pg_stat_activity
     WHERE backend_xid IS NOT NULL ORDER BY age(backend_xid) DESC LIMIT 3`,
  );
  return rows;
}

function revisionsFollowPositions(events: RecordedEvent[]): boolean {
  const next = new Map<string, number>();
  for (const e of events) {
    if (e.revision !== (next.get(e.streamId) ?? 0)) return false;
    next.set(e.streamId, e.revision + 1);
  }
  return true;
}
