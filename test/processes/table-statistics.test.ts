import { openPool } from '../../infra/db.ts';
import t from 'tap';
import { TableStatistics } from '../../processes/table-statistics.ts';
import { freshDatabase } from '../support/database.ts';

/**
 * Statistics kept without autovacuum: a table grown past autovacuum's threshold is analyzed (and
 * its planner then uses its index), one changed below it is left, and a dead-heavy one is vacuumed.
 */
// openPool's: an idle client killed by the database's drop at teardown is no unhandled error.
const pool = openPool({ connectionString: await freshDatabase(t), max: 3 });
t.teardown(() => pool.end());

const { rows: setting } = await pool.query<{ autovacuum: string }>('SHOW autovacuum');
const stats = (table: string) =>
  pool
    .query<{ analyzed: boolean; vacuumed: boolean; reltuples: number }>(
      `SELECT s.last_analyze IS NOT NULL AS analyzed, s.last_vacuum IS NOT NULL AS vacuumed, c.reltuples
       FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid WHERE s.relname = $1`,
      [table],
    )
    .then((r) => r.rows[0]!);

/** Writes in one session whose counts reach the statistics at once (they are flushed at most once a second). */
async function write(...statements: string[]) {
  const client = await pool.connect();
  try {
    for (const s of statements) await client.query(s);
    await client.query('SELECT pg_stat_force_next_flush()');
  } finally {
    client.release();
  }
  // The flush happens when the session next goes idle: one more round trip of it.
  await pool.query('SELECT 1');
}

t.test('grown tables analyzed, small changes left, dead rows vacuumed', async (t) => {
  await write(
    'CREATE TABLE grown (id int PRIMARY KEY, v text)',
    "INSERT INTO grown SELECT g, 'x' FROM generate_series(1, 5000) g",
    'CREATE TABLE quiet (id int PRIMARY KEY)',
    'INSERT INTO quiet SELECT generate_series(1, 20)',
    'CREATE TABLE churned (id int PRIMARY KEY, v int)',
    'INSERT INTO churned SELECT g, 0 FROM generate_series(1, 1000) g',
  );
  const statistics = new TableStatistics(pool, 60_000);
  t.equal(await statistics.tick(), 60_000, 'the next round in the interval');
  t.match(await stats('grown'), { analyzed: true, reltuples: 5000 });
  t.match(await stats('quiet'), { analyzed: false }, 'under 50 rows changed: left');
  const plan = await pool.query('EXPLAIN SELECT * FROM grown WHERE id = 4321');
  t.match(plan.rows.map((r) => r['QUERY PLAN']).join('\n'), /Index Scan using grown_pkey/);

  await write('UPDATE churned SET v = 1', 'UPDATE churned SET v = 2');
  await statistics.tick();
  t.match(await stats('churned'), { analyzed: true, vacuumed: true }, 'dead rows past a fifth: vacuumed too');
});

t.test(
  'started only where autovacuum is off',
  { skip: setting[0]!.autovacuum === 'on' && 'autovacuum is on here' },
  async (t) => {
    await write('INSERT INTO quiet SELECT generate_series(21, 200)');
    const statistics = new TableStatistics(pool, 50);
    await statistics.start();
    t.teardown(() => statistics.stop());
    for (let i = 0; i < 100 && !(await stats('quiet')).analyzed; i++) await new Promise((r) => setTimeout(r, 50));
    t.match(await stats('quiet'), { analyzed: true });
  },
);
