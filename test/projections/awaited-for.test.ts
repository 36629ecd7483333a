import t from 'tap';
import type { CommandContext } from '../../commands/execute.ts';
import { addSuppression, removeSuppression } from '../../commands/suppressions/handlers.ts';
import { registry } from '../../domain/registry.ts';
import { openDatabase } from '../../infra/db.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { sanitiseHtml } from '../../infra/templates/sanitise.ts';
import { defineReactor } from '../../projections/projector.ts';
import { ProjectionRunner } from '../../projections/runner.ts';
import { suppressionsProjector } from '../../projections/suppressions/projector.ts';
import { freshDatabase } from '../support/database.ts';

/**
 * A reactor is waited for only on the event types it names in `awaitedFor` (the webhook fan-out:
 * its control events, not the source events it turns into deliveries). Here one reacts to both
 * suppression events, is waited for on removals only, and is held up until the test lets it go.
 */
t.test('a write waits for a reactor only on the event types the reactor names', async (t) => {
  const database = openDatabase(await freshDatabase(t), 4);
  t.teardown(() => database.close());
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const reacted: string[] = [];
  const held = defineReactor<Record<string, never>>()({
    name: 'held',
    version: 1,
    tables: [],
    ddl: () => '',
    reactsTo: ['SuppressionAdded', 'SuppressionRemoved'],
    awaitedFor: ['SuppressionRemoved'],
    react: async (_db, events) => {
      await gate;
      reacted.push(...events.map((e) => e.type));
    },
  });
  await PostgresEventStore.migrate(database.pool);
  const store = new PostgresEventStore(database.pool);
  t.teardown(() => store.close());
  const runner = new ProjectionRunner(database.db, database.pool, store, registry, [suppressionsProjector], [held], {
    readModelDeadlineMs: 5000,
  });
  await runner.migrate();
  await runner.start();
  t.teardown(() => runner.stop());
  const ctx: CommandContext = { store, registry, readModels: runner, sanitiseHtml };
  const actor = { workspaceId: 'ws_awaited', kind: 'system' as const, id: null };
  const now = () => new Date().toISOString();

  const { suppressionId } = await addSuppression(
    ctx,
    actor,
    { email: 'held@awaited.test', reason: 'manual', detail: null },
    now(),
  );
  const { rows } = await database.pool.query('SELECT 1 FROM suppressions WHERE id = $1', [suppressionId]);
  t.equal(rows.length, 1, 'the add answers with its read model holding it, the reactor held up');
  t.same(reacted, [], 'before the reactor saw it');

  let removed = false;
  const removing = removeSuppression(ctx, actor, { suppressionId, email: 'held@awaited.test' }, now()).then(() => {
    removed = true;
  });
  await new Promise((r) => setTimeout(r, 300));
  t.notOk(removed, 'the removal, a type it names, waits for it');
  open();
  await removing;
  t.same(reacted, ['SuppressionAdded', 'SuppressionRemoved'], 'and answers once it has reacted');
});
