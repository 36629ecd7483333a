import t from 'tap';
import type { RecordedEvent } from '../../infra/eventstore/port.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { openPool } from '../../infra/db.ts';
import { freshDatabase } from '../support/database.ts';
import { eventually } from '../support/receiver.ts';

// A bare pool, without infra/db.ts's global bigint parser: positions must be numbers regardless.
const pool = openPool({ connectionString: await freshDatabase(t), max: 4 });
pool.on('error', () => {});
t.teardown(() => pool.end());
await PostgresEventStore.migrate(pool);
const store = new PostgresEventStore(pool);
t.teardown(() => store.close());

const TYPES = ['ScanA', 'ScanB', 'ScanC'];
let last = 0;
for (let n = 0; n < 40; n++) {
  const events = Array.from({ length: 1 + (n % 3) }, (_, k) => ({
    type: TYPES[(n + k) % 3]!,
    version: 1,
    data: { n, k, text: `é ${'x'.repeat(n)}` },
    metadata: { workspaceId: `ws${n % 2}` },
  }));
  last = (await store.append(`scan-${n % 7}`, events, 'any')).position;
}
// The visible head waits for every older transaction of the cluster, other test files' included.
await eventually(async () => (await store.headPosition()) >= last);

async function scan(options: Parameters<NonNullable<PostgresEventStore['scanAll']>>[0]) {
  const batches: RecordedEvent[][] = [];
  for await (const batch of store.scanAll(options)) batches.push(batch);
  return batches;
}

t.test('scanAll gives the events of the asked types in (after, until], as readAll gives them', async (t) => {
  const all = await store.readAll({ limit: 1000 });
  const head = await store.headPosition();
  t.equal(all.length, head);
  for (const [after, until] of [
    [0, head],
    [5, head - 7],
    [head - 1, head],
    [head, head],
  ] as const) {
    const batches = await scan({ after, until, types: ['ScanA', 'ScanC'], batchSize: 4 });
    const expected = all.filter((e) => e.position > after && e.position <= until && e.type !== 'ScanB');
    t.strictSame(batches.flat(), expected, `(${after}, ${until}]`);
    t.ok(
      batches.every((b) => b.length > 0 && b.length <= 4),
      'batches of at most batchSize',
    );
  }
});

t.test('a caller may stop scanning early', async (t) => {
  const head = await store.headPosition();
  let seen = 0;
  for await (const batch of store.scanAll({ after: 0, until: head, types: TYPES, batchSize: 5 })) {
    seen += batch.length;
    break;
  }
  t.equal(seen, 5);
  t.equal(
    (await scan({ after: 0, until: head, types: TYPES, batchSize: 50 })).flat().length,
    head,
    'the store reads on',
  );
});
