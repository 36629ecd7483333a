import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Test } from 'tap';
import type { Delivery, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';

/**
 * The work-queue contract both adapters are held to. Timing checks assert lower bounds only
 * (a retry never comes early) and otherwise wait for outcomes, so a slow machine is not a failure.
 */
export interface WorkQueueFixture {
  /** Opens the adapter under test; the suite closes it. */
  open(): Promise<WorkQueue>;
  /** After this long an unacked job would have come back, so "delivered once" waits past it. */
  redeliveryWindowMs: number;
}

interface Seen extends Delivery {
  at: number;
}

const ACK: JobOutcome = { ack: true };
/** setTimeout may fire a millisecond before performance.now() says the delay is over. */
const CLOCK_SLACK_MS = 5;

export function workQueueContract(t: Test, fixture: WorkQueueFixture): void {
  let bus: WorkQueue;
  t.before(async () => {
    bus = await fixture.open();
  });
  t.teardown(() => bus?.close());

  t.test('a published job is delivered once, with its payload and attempt 1', async (t) => {
    const seen = recorder();
    const payload = { workspaceId: 'ws_1', nested: { list: [1, 'two', null] } };
    await bus.publish('once', { id: 'job-1', payload });
    const consumer = await bus.consume('once', async (job) => seen.record(job, ACK));
    await eventually(() => seen.all.length === 1, 'the delivery');
    await sleep(fixture.redeliveryWindowMs + 500);
    await consumer.close();
    t.equal(seen.all.length, 1, 'no redelivery after the ack');
    t.match(seen.all[0], { id: 'job-1', attempt: 1 });
    t.same(seen.all[0]?.payload, payload);
  });

  t.test('retryInMs offers the job again after the delay, with attempt 2', async (t) => {
    const delayMs = 400;
    const seen = recorder();
    await bus.publish('retry', { id: 'job-1', payload: { n: 1 } });
    const consumer = await bus.consume('retry', async (job) =>
      seen.record(job, job.attempt === 1 ? { retryInMs: delayMs } : ACK),
    );
    await eventually(() => seen.all.length === 2, 'the redelivery');
    await consumer.close();
    const [first, second] = seen.all;
    t.match(second, { id: 'job-1', attempt: 2, payload: { n: 1 } });
    t.ok(
      second!.at - first!.at >= delayMs - CLOCK_SLACK_MS,
      `redelivered after ${Math.round(second!.at - first!.at)} ms, asked ${delayMs}`,
    );
  });

  t.test('a handler that throws is retried after retryOnErrorMs, and the error is reported', async (t) => {
    const retryOnErrorMs = 200;
    const seen = recorder();
    const errors: { message: string; jobId: string | undefined }[] = [];
    await bus.publish('throws', { id: 'job-1', payload: {} });
    const consumer = await bus.consume(
      'throws',
      async (job) => {
        seen.record(job, ACK);
        if (job.attempt === 1) throw new Error('boom');
        return ACK;
      },
      { retryOnErrorMs, onError: (error, job) => errors.push({ message: (error as Error).message, jobId: job?.id }) },
    );
    await eventually(() => seen.all.length === 2, 'the retry');
    await consumer.close();
    const [first, second] = seen.all;
    t.equal(second?.attempt, 2);
    t.ok(
      second!.at - first!.at >= retryOnErrorMs - CLOCK_SLACK_MS,
      `retried after ${Math.round(second!.at - first!.at)} ms`,
    );
    t.same(errors, [{ message: 'boom', jobId: 'job-1' }]);
  });

  t.test('work published while no consumer runs is delivered when one starts', async (t) => {
    const seen = recorder();
    for (const id of ['a', 'b', 'c']) await bus.publish('waiting', { id, payload: { id } });
    await sleep(200);
    const consumer = await bus.consume('waiting', async (job) => seen.record(job, ACK));
    await eventually(() => seen.all.length === 3, 'all three jobs');
    await consumer.close();
    t.same(seen.all.map((job) => job.id).sort(), ['a', 'b', 'c']);
    t.ok(seen.all.every((job) => job.attempt === 1 && job.payload.id === job.id));
  });

  t.test('no more handlers run at once than the concurrency allows, and that many do', async (t) => {
    const concurrency = 3;
    let running = 0;
    let most = 0;
    let done = 0;
    for (let i = 0; i < 9; i++) await bus.publish('concurrent', { id: `job-${i}`, payload: {} });
    const consumer = await bus.consume(
      'concurrent',
      async () => {
        most = Math.max(most, ++running);
        await sleep(100);
        running--;
        done++;
        return ACK;
      },
      { concurrency },
    );
    await eventually(() => done === 9, 'all nine jobs');
    await consumer.close();
    t.equal(most, concurrency);
  });

  t.test('a job id published twice within the dedup window is delivered once, per queue', async (t) => {
    const seen = recorder();
    const other = recorder();
    await bus.publish('dedup', { id: 'same', payload: { copy: 1 } });
    await bus.publish('dedup', { id: 'same', payload: { copy: 2 } });
    await bus.publish('dedup', { id: 'after', payload: {} });
    await bus.publish('dedup-other', { id: 'same', payload: { copy: 3 } });
    // One at a time, in publish order: once `after` is in, a second `same` would have come before it.
    const consumer = await bus.consume('dedup', async (job) => seen.record(job, ACK));
    const otherConsumer = await bus.consume('dedup-other', async (job) => other.record(job, ACK));
    await eventually(() => seen.all.some((job) => job.id === 'after') && other.all.length === 1, 'the later job');
    await Promise.all([consumer.close(), otherConsumer.close()]);
    t.same(
      seen.all.map((job) => [job.id, job.payload]),
      [
        ['same', { copy: 1 }],
        ['after', {}],
      ],
    );
    t.match(other.all, [{ id: 'same', payload: { copy: 3 } }], 'the same id on another queue is another job');
  });

  t.test('close waits for running handlers and takes no more work', async (t) => {
    const seen = recorder();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    await bus.publish('closing', { id: 'slow', payload: {} });
    const consumer = await bus.consume('closing', async (job) => {
      seen.record(job, ACK);
      await gate;
      finished = true;
      return ACK;
    });
    await eventually(() => seen.all.length === 1, 'the slow job to start');
    let closed = false;
    const closing = consumer.close().then(() => (closed = true));
    await sleep(200);
    t.notOk(closed, 'close is still waiting for the handler');
    release();
    await closing;
    t.ok(finished, 'the handler finished before close resolved');

    await bus.publish('closing', { id: 'later', payload: {} });
    await sleep(300);
    t.equal(seen.all.length, 1, 'a closed consumer takes no new work');
    const next = recorder();
    const successor = await bus.consume('closing', async (job) => next.record(job, ACK));
    await eventually(() => next.all.length === 1, 'the later job on a new consumer');
    await successor.close();
    t.match(next.all, [{ id: 'later', attempt: 1 }], 'the job published after close waited untouched');
  });
}

function recorder() {
  const all: Seen[] = [];
  return {
    all,
    record(job: Delivery, outcome: JobOutcome): JobOutcome {
      all.push({ ...job, at: performance.now() });
      return outcome;
    },
  };
}

export async function eventually(check: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(10);
  }
}
