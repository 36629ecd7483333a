import t, { type Test } from 'tap';
import { InProcessWorkQueue } from '../../infra/bus/in-process.ts';
import type { Delivery } from '../../infra/bus/port.ts';
import { DueWakeups, DueWork } from '../../processes/due-work.ts';
import { Repeating } from '../../processes/repeating.ts';
import { openPool } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';

const HOUR = 3_600_000;

t.test('Repeating: a wake runs a tick planned an hour away, and one more after a tick under way', async (t) => {
  let ticks = 0;
  let release: () => void = () => {};
  const arrived: Array<() => void> = [];
  const nextTick = () => new Promise<void>((resolve) => arrived.push(resolve));
  const loop = new Repeating(
    'test',
    async () => {
      ticks++;
      for (const a of arrived.splice(0)) a();
      if (ticks === 2) await new Promise<void>((resolve) => (release = resolve));
      return HOUR;
    },
    HOUR,
  );
  t.teardown(() => loop.stop());
  const first = nextTick();
  loop.start();
  await first;
  t.equal(ticks, 1);
  const second = nextTick();
  loop.wake();
  await second;
  t.equal(ticks, 2, 'the wake ran the tick planned for an hour later');
  // Woken while the second tick runs: a third follows it at once.
  const third = nextTick();
  loop.wake();
  release();
  await third;
  t.equal(ticks, 3);
});

/**
 * A dispatcher that would otherwise sleep an hour: a job arrives only through what the test
 * checks (a wake, or the earliest waiting row's time), else the test times out.
 */
async function sleepyWork(t: Test) {
  // One teardown, in order: the loop and its connections end before the database is dropped.
  let drop: () => Promise<void> | void = () => {};
  const pool = openPool({ connectionString: await freshDatabase({ teardown: (fn) => (drop = fn) }), max: 4 });
  const bus = new InProcessWorkQueue();
  let work: DueWork<{ id: string }> | undefined;
  t.teardown(async () => {
    await work?.stop();
    await bus.close();
    await pool.end();
    await drop();
  });
  await pool.query(`CREATE TABLE chores (id text PRIMARY KEY, due_at timestamptz NOT NULL, done boolean NOT NULL DEFAULT false,
    enqueued_at timestamptz)`);
  const wakeups = new DueWakeups();
  work = new DueWork<{ id: string }>(
    { pool, bus, wakeups },
    'chores',
    { pollMs: 0, staleAfterMs: HOUR, idleMs: HOUR, label: 'chores' },
    { table: 'chores', key: 'id', waiting: 'NOT done', when: 'due_at', order: 'due_at', returning: 'r.id' },
    (r) => ({ id: r.id, payload: { id: r.id } }),
  );
  const handled: string[] = [];
  const waiters: Array<() => void> = [];
  await work.start(
    async (job: Delivery) => {
      handled.push(String(job.payload.id));
      await pool.query('UPDATE chores SET done = true WHERE id = $1', [job.payload.id]);
      for (const w of waiters.splice(0)) w();
      return { ack: true } as const;
    },
    { concurrency: 1 },
  );
  const handledNext = () => new Promise<void>((resolve) => waiters.push(resolve));
  return { pool, wakeups, handled, handledNext };
}

t.test('DueWork: a row written and announced is claimed without waiting for the idle poll', async (t) => {
  const { pool, wakeups, handled, handledNext } = await sleepyWork(t);
  // The claim at start found nothing; the loop now sleeps an hour.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const next = handledNext();
  await pool.query("INSERT INTO chores (id, due_at) VALUES ('a', now())");
  wakeups.wake(['other_table']);
  wakeups.wake(['chores']);
  await next;
  t.same(handled, ['a']);
});

t.test('DueWork: a row due later is claimed when its time comes, with no wake', async (t) => {
  const { pool, wakeups, handled, handledNext } = await sleepyWork(t);
  await new Promise((resolve) => setTimeout(resolve, 50));
  // Written with a wake while not yet due: the loop learns when it falls due, and sleeps till then.
  await pool.query("INSERT INTO chores (id, due_at) VALUES ('later', now() + interval '300 milliseconds')");
  wakeups.wake(['chores']);
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.same(handled, [], 'not before its time');
  await handledNext();
  t.same(handled, ['later']);
});
