import t from 'tap';
import { currentState } from '../../commands/followed.ts';
import { assertStreamOpen, pauseStream } from '../../commands/sending-streams/handlers.ts';
import { sendingStreamsStream } from '../../domain/sending-streams/events.ts';
import { sendingStreamsAggregate } from '../../domain/sending-streams/state.ts';
import type { EventStore } from '../../infra/eventstore/port.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { startTestApp } from '../support/app.ts';

const counts = {
  transactional: { sent: 200, bounced: 20, complained: 0 },
  broadcast: { sent: 0, bounced: 0, complained: 0 },
};

/** One app for the file: each test makes a workspace of its own and follows only its stream. */
const h = await startTestApp(t);

t.test('a followed stream: a write by another process is seen by the next check', async (t) => {
  const { workspaceId } = await h.workspace();
  const ctx = h.system.commands;
  // Another process: its own event store on the same database, so nothing it writes passes through ours.
  const other = { ...ctx, store: new PostgresEventStore(h.system.database.pool) };
  t.teardown(() => other.store.close());

  await assertStreamOpen(ctx, workspaceId, 'transactional');
  await pauseStream(
    other,
    { workspaceId, kind: 'system', id: null },
    { stream: 'transactional', reason: 'bounce_rate', rate: 0.1, counts: counts.transactional },
    new Date().toISOString(),
  );
  await t.rejects(assertStreamOpen(ctx, workspaceId, 'transactional'), { code: 'stream_paused' });
  await assertStreamOpen(ctx, workspaceId, 'broadcast');
});

t.test('checks waiting together share one read of what was appended since', async (t) => {
  const { workspaceId } = await h.workspace();
  const reads: number[] = [];
  const store = h.system.commands.store;
  // The real store, its reads counted.
  const counting: EventStore = Object.create(store, {
    readStream: {
      value: (stream: string, from?: number) => {
        reads.push(from ?? 0);
        return store.readStream(stream, from);
      },
    },
  });
  const ctx = { ...h.system.commands, store: counting };
  const stream = sendingStreamsStream(workspaceId);
  const states = await Promise.all(
    Array.from({ length: 50 }, () => currentState(ctx, stream, sendingStreamsAggregate)),
  );
  t.ok(reads.length <= 2, `50 checks made ${reads.length} reads`);
  t.equal(new Set(states).size, 1, 'they share one state');
  await pauseStream(
    h.system.commands,
    { workspaceId, kind: 'system', id: null },
    { stream: 'broadcast', reason: 'complaint_rate', rate: 0.01, counts: counts.broadcast },
    new Date().toISOString(),
  );
  reads.length = 0;
  const after = await currentState(ctx, stream, sendingStreamsAggregate);
  t.same(reads, [0], 'the stream had no event before; the next read starts at revision 0');
  t.equal(after.broadcast.paused, true);
});
