import crypto from 'node:crypto';
import type pg from 'pg';
import t from 'tap';
import { addSuppression } from '../../commands/suppressions/handlers.ts';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openPool } from '../../infra/db.ts';
import type { EventStore } from '../../infra/eventstore/port.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { openSystem, type System } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { pagedStore } from '../support/paged-store.ts';
import { eventually } from '../support/receiver.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

const ADDS = 1_500;

/**
 * Suppression events written straight to the log while no process projects (as a restore or a
 * long outage leaves it): ADDS adds in one workspace, every tenth removed again, and a few
 * addresses back under new ids after their removal.
 */
async function writeWhileDown(store: EventStore, workspaceId: string): Promise<void> {
  const metadata = { workspaceId, actor: { kind: 'system', id: null }, requestId: null };
  const added = (email: string) => ({
    type: 'SuppressionAdded',
    version: 1,
    data: {
      suppressionId: crypto.randomUUID(),
      email,
      reason: 'manual',
      detail: null,
      removable: true,
      createdAt: new Date().toISOString(),
    },
    metadata,
  });
  const streams = Array.from({ length: ADDS }, (_, n) => `ws-${workspaceId}.suppression-down${n}@bulk.test`);
  const adds = [];
  for (let n = 0; n < ADDS; n += 100)
    adds.push(
      ...(await Promise.all(
        streams.slice(n, n + 100).map(async (stream, k) => {
          const event = added(`down${n + k}@bulk.test`);
          await store.append(stream, [event], 'no_stream');
          return event;
        }),
      )),
    );
  for (let n = 0; n < ADDS; n += 10) {
    const { suppressionId, email } = adds[n]!.data;
    const removed = {
      type: 'SuppressionRemoved',
      version: 1,
      data: { suppressionId, email, removedAt: new Date().toISOString() },
      metadata,
    };
    await store.append(streams[n]!, n % 30 === 0 ? [removed, added(email)] : [removed], 0);
  }
}

const table = async (pool: pg.Pool, schema: string) =>
  (await pool.query(`SELECT * FROM ${schema}.suppressions ORDER BY workspace_id, email`)).rows;
const tableOid = async (pool: pg.Pool) =>
  (await pool.query(`SELECT 'public.suppressions'::regclass::oid AS oid`)).rows[0].oid as number;

/**
 * A database whose suppressions projector stands behind ADDS events written while no process
 * ran, and the workspace they belong to.
 */
async function behind(t: { teardown(fn: () => Promise<void> | void): void }) {
  const url = await freshDatabase(t);
  const setUp = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false });
  const ws = await createWorkspace(setUp.commands, { name: 'Bulk', ownerEmail: 'owner@bulk.test' });
  await setUp.close();
  const down = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false, project: false });
  await writeWhileDown(down.store, ws.workspaceId);
  // The visible head waits for every older transaction of the cluster (other tests' included): the
  // next start must see all of these events behind its checkpoint.
  const { rows } = await down.database.pool.query('SELECT max(position) AS last FROM es_events');
  await eventually(async () => (await down.store.headPosition()) >= Number(rows[0].last));
  await down.close();
  return { url, workspaceId: ws.workspaceId };
}

/** The table as a rebuild through decoded events (readAll pages, `applyBatch`) makes it. */
async function decodedRebuild(s: System) {
  const projector = s.runner.projectors.find((p) => p.name === 'suppressions')!;
  const { db, pool } = s.database;
  await rebuildProjection(db, pool, pagedStore(s.store), s.runner, projector, { swap: false, schema: 'decoded' });
  return table(pool, 'decoded');
}

t.test('a projector far behind at start is rebuilt and swapped in, and follows the log from there', async (t) => {
  const { url, workspaceId } = await behind(t);
  // openPool's: its idle client killed by the database's drop at teardown is no unhandled error.
  const admin = openPool({ connectionString: url, max: 1 });
  t.teardown(() => admin.end());
  const before = await tableOid(admin);
  const s = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false, bulkCatchUpEvents: ADDS });
  t.teardown(() => s.close());
  // A write made while the rebuild runs waits for it, as it would for a catch-up, and is then seen.
  const actor = { workspaceId, kind: 'system' as const, id: null };
  const during = await addSuppression(
    s.commands,
    actor,
    { email: 'during@bulk.test', reason: 'manual', detail: null },
    new Date().toISOString(),
  );
  t.not(await tableOid(admin), before, 'the table was swapped for a rebuilt one');
  const rows = await table(admin, 'public');
  t.equal(rows.length, ADDS - ADDS / 10 + ADDS / 30 + 1, 'adds, less removals, addresses back, the new one');
  t.ok(rows.some((r) => r.id === during.suppressionId));
  t.same(await decodedRebuild(s), rows, 'the rows decoding and applying every event leaves');
  const head = await s.store.headPosition();
  const { rows: cp } = await admin.query(`SELECT position FROM projection_checkpoints WHERE name = 'suppressions'`);
  t.ok(Number(cp[0].position) >= head, 'the checkpoint stands at the head');

  // It follows the log: a later write applies on the swapped table.
  const after = await addSuppression(
    s.commands,
    actor,
    { email: 'after@bulk.test', reason: 'manual', detail: null },
    new Date().toISOString(),
  );
  await eventually(async () => (await table(admin, 'public')).some((r) => r.id === after.suppressionId));
  t.pass('a later add is projected');
});

t.test('fewer events behind than bulkCatchUpEvents are caught up in place, on the same table', async (t) => {
  const { url } = await behind(t);
  const admin = openPool({ connectionString: url, max: 1 });
  t.teardown(() => admin.end());
  const before = await tableOid(admin);
  const s = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false, bulkCatchUpEvents: ADDS * 2 });
  t.teardown(() => s.close());
  const head = await s.store.headPosition();
  await s.runner.waitFor(head, ['SuppressionAdded']);
  t.equal(await tableOid(admin), before, 'the same table');
  t.same(await table(admin, 'public'), await decodedRebuild(s), 'the same rows as a rebuild');
});
