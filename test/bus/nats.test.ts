import { pathToFileURL } from 'node:url';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from 'nats';
import t from 'tap';
import { NatsWorkQueue, type NatsWorkQueueOptions } from '../../infra/bus/nats.ts';
import type { Delivery } from '../../infra/bus/port.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { eventually, workQueueContract } from './contract.ts';
import { runnable } from '../support/paths.ts';

const url = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
// A stream of this run's own, so parallel runs and leftovers cannot feed each other work.
const run = `${process.pid}_${Date.now().toString(36)}`;
const base = { streamName: `TEST_BUS_${run}`, subjectPrefix: `test_bus_${run}` };

async function open(options: NatsWorkQueueOptions): Promise<NatsWorkQueue> {
  try {
    return await NatsWorkQueue.connect(url, { ...base, ...options });
  } catch (error) {
    throw new Error(`NATS with JetStream is needed at ${url} (set NATS_URL): ${(error as Error).message}`);
  }
}

t.teardown(async () => {
  const nc = await connect({ servers: url });
  const jsm = await nc.jetstreamManager();
  await jsm.streams.delete(base.streamName).catch(() => {});
  await nc.close();
});

t.test('contract', async (t) => {
  const ackWaitMs = 1_500;
  workQueueContract(t, { open: () => open({ ackWaitMs }), redeliveryWindowMs: ackWaitMs });
});

t.test(
  'an outage longer than the NATS client gives up after by default: work published after it is consumed',
  async (t) => {
    const proxy = await startTcpProxy('127.0.0.1', Number(new URL(url).port || 4222));
    t.teardown(() => proxy.close());
    // nats.js stops after 10 reconnect attempts unless told otherwise: 20 ms apart (and its jitter), the
    // outage below lasts past 15 of them. A publish the server does not confirm fails after 1 s, not 5.
    const bus = await NatsWorkQueue.connect(`nats://127.0.0.1:${proxy.port}`, {
      ...base,
      reconnectWaitMs: 20,
      requestTimeoutMs: 1_000,
    });
    t.teardown(() => bus.close());
    const seen: Delivery[] = [];
    const consumer = await bus.consume('outage', async (job) => {
      seen.push(job);
      return { ack: true };
    });
    t.teardown(() => consumer.close());
    await bus.publish('outage', { id: 'before', payload: {} });
    await eventually(() => seen.length === 1, 'the job published before the outage');

    await proxy.cutCounting();
    // Whether JetStream stored it is unknown to the caller (the ack timed out): callers keep such
    // work in the database until it is acknowledged, as the webhook sender does.
    await t.rejects(bus.publish('outage', { id: 'during', payload: {} }), 'publishing fails while the server is away');
    await eventually(() => proxy.resets > 15, 'reconnect attempts past the 10 nats.js allows by default', 30_000);
    await proxy.restore();

    // The client reconnects on its own; until it has, a publish still fails.
    const deadline = performance.now() + 15_000;
    for (;;) {
      try {
        await bus.publish('outage', { id: 'after', payload: {} });
        break;
      } catch (error) {
        if (performance.now() > deadline) throw error;
        await sleep(200);
      }
    }
    await eventually(() => seen.some((d) => d.id === 'after'), 'the job published after the outage', 15_000);
  },
);

t.test('a job outlives the connection that published it', async (t) => {
  const publisher = await open({});
  await publisher.publish('outlives', { id: 'job-1', payload: { n: 1 } });
  await publisher.close();
  const bus = await open({});
  t.teardown(() => bus.close());
  const seen: Delivery[] = [];
  const consumer = await bus.consume('outlives', async (job) => {
    seen.push(job);
    return { ack: true };
  });
  await eventually(() => seen.length === 1, 'the job');
  await consumer.close();
  t.match(seen, [{ id: 'job-1', attempt: 1, payload: { n: 1 } }]);
});

t.test('a job held by a consumer that dies is redelivered after the ack wait, not before', async (t) => {
  const ackWaitMs = 1_000;
  const holdMs = 2_500;
  const bus = await open({ ackWaitMs });
  t.teardown(() => bus.close());
  await bus.publish('crash', { id: 'held', payload: { n: 1 } });

  // A real process that takes the job and never settles it, so only a kill can end its hold.
  const busModule = runnable('infra/bus/nats');
  const loader = busModule.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const holder = spawn(process.execPath, [...loader, '--input-type=module', '-e', HOLDER], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: {
      ...process.env,
      BUS_MODULE: pathToFileURL(busModule).href,
      BUS_URL: url,
      BUS_OPTIONS: JSON.stringify({ ...base, ackWaitMs }),
    },
  });
  t.teardown(() => void holder.kill('SIGKILL'));
  const [line] = (await once(createInterface({ input: holder.stdout! }), 'line')) as [string];
  t.same(JSON.parse(line), { id: 'held', attempt: 1 }, 'the other process holds the job');

  const seen: (Delivery & { at: number })[] = [];
  const consumer = await bus.consume('crash', async (job) => {
    seen.push({ ...job, at: performance.now() });
    return { ack: true };
  });
  // Longer than two ack waits: the holder's heartbeats must keep the job from being redelivered.
  await sleep(holdMs);
  t.equal(seen.length, 0, 'a running handler keeps its job past the ack wait');

  holder.kill('SIGKILL');
  await once(holder, 'exit');
  const killedAt = performance.now();
  await eventually(() => seen.length === 1, 'the redelivery');
  await consumer.close();
  t.match(seen, [{ id: 'held', attempt: 2, payload: { n: 1 } }]);
  // The ack wait runs from the holder's last heartbeat, which a busy machine can delay by hundreds
  // of milliseconds; what holds regardless is that the kill itself redelivers nothing at once.
  const waited = seen[0]!.at - killedAt;
  t.ok(waited >= ackWaitMs / 4, `redelivered ${Math.round(waited)} ms after the kill`);
});

const HOLDER = `
const { NatsWorkQueue } = await import(process.env.BUS_MODULE);
const bus = await NatsWorkQueue.connect(process.env.BUS_URL, JSON.parse(process.env.BUS_OPTIONS));
await bus.consume('crash', (job) => {
  console.log(JSON.stringify({ id: job.id, attempt: job.attempt }));
  return new Promise(() => {});
});
`;
