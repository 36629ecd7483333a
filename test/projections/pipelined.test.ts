import { sql } from 'kysely';
import pg from 'pg';
import t from 'tap';
import { addSuppression } from '../../commands/suppressions/handlers.ts';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { PipelinedWrites } from '../../infra/pipeline.ts';
import { recordingDb } from '../../projections/pipeline.ts';
import { openSystem } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

t.test('a transaction sent whole: all of it, or nothing of it when one statement fails', async (t) => {
  const url = await freshDatabase(t);
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());
  await admin.query('CREATE TABLE probe (id int PRIMARY KEY, note text NOT NULL)');
  const writes = new PipelinedWrites(url, 1);
  t.teardown(() => writes.close());
  const insert = 'INSERT INTO probe (id, note) VALUES ($1, $2)';

  await writes.run([
    { text: insert, values: [1, 'one'] },
    { text: insert, values: [2, 'two'] },
    { text: 'UPDATE probe SET note = note || $1', values: ['!'] },
  ]);
  t.same((await admin.query('SELECT id, note FROM probe ORDER BY id')).rows, [
    { id: 1, note: 'one!' },
    { id: 2, note: 'two!' },
  ]);

  // The second statement breaks the key: the first's row goes with it, and so do the statements after.
  const refused = await writes
    .run([
      { text: insert, values: [3, 'three'] },
      { text: insert, values: [1, 'again'] },
      { text: insert, values: [4, 'four'] },
    ])
    .then(
      () => null,
      (error: { code?: string }) => error,
    );
  t.equal(refused?.code, '23505', 'the failing statement’s error');
  t.same((await admin.query('SELECT id FROM probe ORDER BY id')).rows, [{ id: 1 }, { id: 2 }], 'nothing of it');

  // The connection (the only one) is usable after a failure: its transaction ended.
  await writes.run([{ text: insert, values: [5, 'five'] }]);
  t.same((await admin.query('SELECT count(*)::int AS n FROM probe')).rows, [{ n: 3 }]);
});

t.test('a recording database keeps what Kysely would have run, in order, and answers no rows', async (t) => {
  const { db, take } = recordingDb();
  const answered = await sql`INSERT INTO probe (id) VALUES (${7})`.execute(db);
  await sql`DELETE FROM probe WHERE id = ${8}`.execute(db);
  t.same(answered.rows, []);
  t.same(take(), [
    { text: 'INSERT INTO probe (id) VALUES ($1)', values: [7] },
    { text: 'DELETE FROM probe WHERE id = $1', values: [8] },
  ]);
  t.same(take(), [], 'taken once');
});

t.test('a batch finds its checkpoint moved by another process: nothing of it is written', async (t) => {
  const url = await freshDatabase(t);
  // A small pool: the suite runs three files at once under PostgreSQL's 100 connections.
  const system = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false, poolSize: 4 });
  t.teardown(() => system.close());
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  t.teardown(() => admin.end());

  // Through the service: the suppressions projector's batches go this way (read your writes).
  const ws = await createWorkspace(system.commands, { name: 'Pipelined', ownerEmail: 'owner@pipelined.test' });
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  const { suppressionId } = await addSuppression(
    system.commands,
    actor,
    { email: 'one@pipelined.test', reason: 'manual', detail: null },
    new Date().toISOString(),
  );
  t.equal((await admin.query('SELECT 1 FROM suppressions WHERE id = $1', [suppressionId])).rowCount, 1);

  const { rows } = await admin.query("SELECT position FROM projection_checkpoints WHERE name = 'suppressions'");
  const at = Number(rows[0].position);
  const writes = new PipelinedWrites(url, 1);
  t.teardown(() => writes.close());
  const refused = await writes
    .run([
      { text: 'SELECT projection_checkpoint_move($1, $2, $3)', values: ['suppressions', at - 1, at + 5] },
      { text: 'DELETE FROM suppressions WHERE id = $1', values: [suppressionId] },
    ])
    .then(
      () => null,
      (error: { code?: string }) => error,
    );
  t.equal(refused?.code, 'WMS01', 'moved past where the batch began');
  t.equal((await admin.query('SELECT 1 FROM suppressions WHERE id = $1', [suppressionId])).rowCount, 1, 'kept');
  const after = await admin.query("SELECT position FROM projection_checkpoints WHERE name = 'suppressions'");
  t.equal(Number(after.rows[0].position), at, 'the checkpoint where it was');
});
