import t from 'tap';
import { PostgresTextIndex, TEXT_INDEX_SCHEMA } from '../../infra/search/postgres.ts';
import { openPool } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';

const pool = openPool({ connectionString: await freshDatabase(t), max: 2 });
t.teardown(() => pool.end());
await pool.query(TEXT_INDEX_SCHEMA);
const index = new PostgresTextIndex(pool);

const found = async (word: string) =>
  (
    await pool.query<{ sha256: string }>(
      `SELECT sha256 FROM message_texts WHERE search @@ to_tsquery('simple', $1) ORDER BY sha256`,
      [word],
    )
  ).rows.map((r) => r.sha256);

t.test('texts put together go in together; one the database refuses fails alone', async (t) => {
  // Past 1 MB of distinct words: more than a tsvector holds, so PostgreSQL refuses this one text.
  const huge = Array.from({ length: 120_000 }, (_, i) => `word${i}x`).join(' ');
  const results = await Promise.allSettled([
    index.put('a'.repeat(64), 'alpha shared'),
    index.put('b'.repeat(64), huge),
    index.put('c'.repeat(64), 'gamma\u0000delta shared'),
  ]);
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.match((results[1] as PromiseRejectedResult).reason, { message: /too long for tsvector/ });
  t.same(await found('shared'), ['a'.repeat(64), 'c'.repeat(64)]);
  t.same(await found('delta'), ['c'.repeat(64)], 'a NUL parts words as a space does');
  t.same(await found('word7x'), [], 'the refused text left nothing');
});

t.test('the same hash is written once; a second put changes nothing', async (t) => {
  await index.put('d'.repeat(64), 'first words');
  await index.put('d'.repeat(64), 'other words');
  t.same(await found('first'), ['d'.repeat(64)]);
  t.same(await found('other'), []);
});
