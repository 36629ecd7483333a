import type { Kysely } from 'kysely';
import t from 'tap';
import { defineProjector, type ProjectedEvent } from '../../projections/projector.ts';

/** What defineProjector's applyBatch hands over: runs of an `onRun` type together, anything else alone, in log order. */
t.test('onRun takes each run of its type in a row; other events apply alone, in their place', async (t) => {
  const calls: string[] = [];
  const projector = defineProjector<Record<string, never>>()({
    name: 'probe',
    version: 1,
    tables: [],
    ddl: () => '',
    on: {
      MessageReceived: async (_db, e) => {
        calls.push(`one ${e.position}`);
      },
      FileDeleted: async (_db, e) => {
        calls.push(`one ${e.position}`);
      },
    },
    onRun: {
      MessageReceived: async (_db, events) => {
        calls.push(`run ${events.map((e) => e.position).join(',')}`);
      },
    },
  });
  const event = (type: string, position: number) => ({ type, position }) as unknown as ProjectedEvent;
  const db = {} as Kysely<unknown>;
  await projector.applyBatch(db, [
    event('MessageReceived', 1),
    event('MessageReceived', 2),
    event('FileDeleted', 3),
    event('FileDeleted', 4),
    event('MessageReceived', 5),
  ]);
  t.same(calls, ['run 1,2', 'one 3', 'one 4', 'run 5']);
  calls.length = 0;
  await projector.apply(db, event('MessageReceived', 6));
  t.same(calls, ['one 6'], 'a single event goes to its applier');
});
