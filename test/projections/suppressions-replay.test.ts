import { sql } from 'kysely';
import t from 'tap';
import type { Actor } from '../../commands/execute.ts';
import { addSuppression, removeSuppression } from '../../commands/suppressions/handlers.ts';
import type { EventInPlace } from '../../infra/eventstore/port.ts';
import type { ProjectedEvent } from '../../projections/projector.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { suppressionsProjector } from '../../projections/suppressions/projector.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { pagedStore } from '../support/paged-store.ts';

const REASONS = ['bounce', 'complaint', 'manual'] as const;

async function table(h: TestApp, schema: string) {
  const { pool } = h.system.database;
  const rows = (await pool.query(`SELECT * FROM ${schema}.suppressions ORDER BY workspace_id, email`)).rows;
  const indexes = (
    await pool.query(
      `SELECT indexname, replace(indexdef, $1, '') AS def FROM pg_indexes WHERE schemaname = $2 AND tablename = 'suppressions' ORDER BY 1`,
      [`${schema}.`, schema],
    )
  ).rows;
  return { rows, indexes };
}

t.test(
  'suppressions rebuilt in place, from decoded events or through readAll pages equal the live table',
  async (t) => {
    const h = await startTestApp(t);
    const ctx = h.system.commands;
    const actors: Actor[] = ['ws_replay_a', 'ws_replay_b'].map((workspaceId) => ({
      workspaceId,
      kind: 'system',
      id: null,
    }));
    const now = () => new Date().toISOString();
    const add = async (from: number, to: number, prefix: string) => {
      const added: { actor: Actor; email: string; id: string; reason: string }[] = [];
      for (let i = from; i < to; i += 100) {
        await Promise.all(
          Array.from({ length: Math.min(100, to - i) }, async (_, k) => {
            const n = i + k;
            const actor = actors[n % 2]!;
            const email = `${prefix}${n}@replay.test`;
            const reason = REASONS[n % 3]!;
            const r = await addSuppression(
              ctx,
              actor,
              { email, reason, detail: reason === 'manual' ? null : `detail ${n}` },
              now(),
            );
            added.push({ actor, email, id: r.suppressionId, reason });
          }),
        );
      }
      return added;
    };
    const remove = (entries: { actor: Actor; email: string; id: string }[]) =>
      Promise.all(entries.map((e) => removeSuppression(ctx, e.actor, { suppressionId: e.id, email: e.email }, now())));

    // A rebuild reads 2,000 events a batch: the first batch holds adds only; the removals land in
    // the second, some of an add made in the first batch and some of an add in the same batch; some
    // addresses come back under new ids in the second batch, others only in the third.
    const first = await add(0, 2400, 'a');
    const removed = first.filter((e, n) => e.reason !== 'bounce' && n % 7 === 0);
    await remove(removed);
    await add(0, 1200, 'b');
    const back = removed.filter((_, n) => n % 2 === 0);
    await Promise.all(
      back
        .slice(0, 40)
        .map((e) => addSuppression(ctx, e.actor, { email: e.email, reason: 'manual', detail: null }, now())),
    );
    await add(1200, 1800, 'b');
    await Promise.all(
      back
        .slice(40)
        .map((e) => addSuppression(ctx, e.actor, { email: e.email, reason: 'complaint', detail: 'again' }, now())),
    );

    const live = await table(h, 'public');
    t.equal(live.rows.length, 2400 - removed.length + 1800 + back.length);
    t.equal(live.indexes.length, 6, 'the key and five indexes');
    const { db, pool } = h.system.database;
    const projector = h.system.runner.projectors.find((p) => p.name === 'suppressions')!;
    const store = h.system.store;
    const bulk = await rebuildProjection(db, pool, store, h.system.runner, projector, {
      swap: false,
      schema: 'bulk_replay',
    });
    t.equal(
      bulk.events,
      2400 + removed.length + 1800 + back.length,
      'every suppression event, none of the workspaces or keys',
    );
    t.same(await table(h, 'bulk_replay'), live, 'replayed in place: rows, key and indexes equal the live table');
    // A log holding another version than the replay reads goes through applyBatch: this replay
    // would fail were it run.
    const otherVersions = {
      ...projector,
      bulkLoad: { ...projector.bulkLoad!, versions: { SuppressionAdded: 2 }, load: () => sql`SELECT 1 / 0` },
    };
    await rebuildProjection(db, pool, store, h.system.runner, otherVersions, { swap: false, schema: 'decoded_replay' });
    t.same(await table(h, 'decoded_replay'), live, 'other versions: rows, key and indexes equal the live table');
    // A store without the bulk read (the EventStoreDB adapter) is read with readAll pages.
    await rebuildProjection(db, pool, pagedStore(store), h.system.runner, projector, {
      swap: false,
      schema: 'paged_replay',
    });
    t.same(await table(h, 'paged_replay'), live, 'readAll pages: rows, key and indexes equal the live table');
  },
);

t.test('a batch and the bulk replay do what applying one event at a time does, or refuse', async (t) => {
  const h = await startTestApp(t);
  const { db, pool } = h.system.database;
  let position = 0;
  const added = (workspaceId: string, id: string, email: string): ProjectedEvent => ({
    type: 'SuppressionAdded',
    data: {
      suppressionId: id,
      email,
      reason: 'manual',
      detail: null,
      removable: true,
      createdAt: new Date(Date.UTC(2025, 0, 1, 0, 0, ++position)).toISOString(),
    },
    streamId: `ws-${workspaceId}.suppression-${email}`,
    revision: 0,
    position,
    recordedAt: new Date(),
    metadata: { workspaceId },
  });
  const removedEvent = (workspaceId: string, id: string, email: string): ProjectedEvent => ({
    type: 'SuppressionRemoved',
    data: { suppressionId: id, email, removedAt: new Date().toISOString() },
    streamId: `ws-${workspaceId}.suppression-${email}`,
    revision: 1,
    position: ++position,
    recordedAt: new Date(),
    metadata: { workspaceId },
  });
  const id = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  const inSchema = async (schema: string, fn: (trx: any) => Promise<void>) => {
    await db
      .withSchema(schema)
      .transaction()
      .execute(async (trx) => {
        await sql.raw(`SET LOCAL search_path TO ${schema}, public`).execute(trx);
        await fn(trx);
      });
  };
  const fresh = async (schema: string, ddl: string) =>
    pool.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}; ${ddl}`);

  const events = [
    added('w1', id(1), 'first@x.test'),
    added('w1', id(1), 'second@x.test'), // the same id again: the first add stays
    added('w1', id(2), 'kept@x.test'),
    removedEvent('w2', id(2), 'kept@x.test'), // another workspace's removal leaves it
    added('w1', id(3), 'gone@x.test'),
    removedEvent('w1', id(3), 'gone@x.test'),
    added('w1', id(4), 'gone@x.test'), // the address back under a new id
    added('w2', id(5), 'moved@x.test'),
    removedEvent('w1', id(5), 'moved@x.test'),
    added('w1', id(6), 'last@x.test'),
  ];
  const rows = async (schema: string) => (await pool.query(`SELECT * FROM ${schema}.suppressions ORDER BY id`)).rows;
  const p = suppressionsProjector;
  await fresh('one_by_one', p.ddl('one_by_one') + p.indexes!('one_by_one'));
  await inSchema('one_by_one', async (trx) => {
    for (const e of events) await p.apply(trx, e);
  });
  const expected = await rows('one_by_one');
  t.same(
    expected.map((r) => r.email),
    ['first@x.test', 'kept@x.test', 'gone@x.test', 'moved@x.test', 'last@x.test'],
  );

  for (const size of [1, 3, events.length]) {
    await fresh('batched', p.ddl('batched') + p.indexes!('batched'));
    for (let i = 0; i < events.length; i += size)
      await inSchema('batched', (trx) => p.applyBatch!(trx, events.slice(i, i + size)));
    t.same(await rows('batched'), expected, `applyBatch in batches of ${size}`);
  }

  // The bulk replay, over the events as a store shows them in place, in two stretches (each
  // statement over each stretch, as a rebuild runs them). It assumes an id is added once (the
  // domain draws a new one for every add): an id added twice fails the key.
  const bulkReplay = async (schema: string, log: ProjectedEvent[]) => {
    const bulk = p.bulkLoad!;
    await fresh(
      schema,
      `${bulk.ddl(schema)}
      CREATE TABLE ${schema}.log (position bigint, type text, version int, data jsonb, metadata jsonb);`,
    );
    for (const e of log)
      await pool.query(`INSERT INTO ${schema}.log VALUES ($1, $2, 1, $3, $4)`, [
        e.position,
        e.type,
        e.data,
        e.metadata,
      ]);
    const middle = log[Math.floor(log.length / 2)]!.position;
    const stretches = [
      sql<EventInPlace>`(SELECT * FROM log WHERE position <= ${middle})`,
      sql<EventInPlace>`(SELECT * FROM log WHERE position > ${middle})`,
    ];
    for (const statement of [bulk.prepare!, bulk.load])
      for (const events of stretches)
        await inSchema(schema, async (trx) => {
          await statement(events).execute(trx);
        });
    await pool.query(p.indexes!(schema) + bulk.keys(schema) + bulk.finish(schema));
    await pool.query(`DROP TABLE ${schema}.log`);
  };
  const onceEach = events.filter((_, i) => i !== 1);
  await fresh('one_by_one_once', p.ddl('one_by_one_once') + p.indexes!('one_by_one_once'));
  await inSchema('one_by_one_once', async (trx) => {
    for (const e of onceEach) await p.apply(trx, e);
  });
  await bulkReplay('bulk', onceEach);
  t.same(await table(h, 'bulk'), await table(h, 'one_by_one_once'), 'bulk replay: rows, key and indexes');
  await t.rejects(bulkReplay('bulk_twice', events), { code: '23505' }, 'an id added twice fails the key');

  const back = [
    added('w1', id(7), 'back@x.test'),
    removedEvent('w1', id(7), 'back@x.test'),
    added('w1', id(8), 'other@x.test'),
    added('w1', id(7), 'back@x.test'),
  ];
  await fresh('one_by_one_back', p.ddl('one_by_one_back') + p.indexes!('one_by_one_back'));
  await inSchema('one_by_one_back', async (trx) => {
    for (const e of back) await p.apply(trx, e);
  });
  await bulkReplay('bulk_back', back);
  t.same(
    await table(h, 'bulk_back'),
    await table(h, 'one_by_one_back'),
    'an id added again after its removal, in the other stretch, is kept',
  );
});
