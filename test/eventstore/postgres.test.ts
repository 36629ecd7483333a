import pg from 'pg';
import t from 'tap';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { freshDatabase } from '../support/database.ts';
import { eventStoreContract } from './contract.ts';

// A bare pool, without infra/db.ts's global bigint parser: positions must be numbers regardless.
const pool = new pg.Pool({ connectionString: await freshDatabase(t), max: 10 });
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
