import { sql } from 'kysely';
import t from 'tap';
import { openDatabase } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';

type Tables = { items: { id: number; name: string; extra?: string } };

t.test("kysely's statements are prepared once per connection and survive a swapped table", async (t) => {
  const database = openDatabase(await freshDatabase(t), 1);
  t.teardown(() => database.close());
  const db = database.db.withTables<Tables>();
  await database.pool.query(
    `CREATE TABLE items (id int PRIMARY KEY, name text NOT NULL); INSERT INTO items VALUES (1, 'a')`,
  );
  const read = () => db.selectFrom('items').selectAll().where('id', '=', 1).execute();

  t.same(await read(), [{ id: 1, name: 'a' }]);
  const { rows } = await database.pool.query(`SELECT name, statement FROM pg_prepared_statements`);
  t.equal(rows.length, 1, 'the select is a named statement on the one connection');
  t.match(rows[0].statement, /from "items"/);

  // The same columns swapped in under it (what a rebuild does): the plan follows.
  await database.pool.query(`
    CREATE TABLE items_new (id int PRIMARY KEY, name text NOT NULL); INSERT INTO items_new VALUES (1, 'b');
    DROP TABLE items; ALTER TABLE items_new RENAME TO items`);
  t.same(await read(), [{ id: 1, name: 'b' }]);

  // Other columns under a `SELECT *`: that run fails, the next one is prepared afresh.
  await database.pool.query(`ALTER TABLE items ADD COLUMN extra text`);
  await t.rejects(read(), { code: '0A000' });
  t.same(await read(), [{ id: 1, name: 'b', extra: null }]);

  // Statements without parameters keep the simple protocol: several in one string still run.
  await sql.raw(`SET LOCAL statement_timeout = 0; SELECT 1`).execute(database.db);
  t.pass('a multi-statement string without parameters runs');
});
