import { performance } from 'node:perf_hooks';
import {
  assertQueueName,
  DEFAULT_DEDUP_WINDOW_MS,
  resolveConsumeOptions,
  runHandler,
  type Consumer,
  type ConsumeOptions,
  type Job,
  type JobHandler,
  type ResolvedConsumeOptions,
  type WorkQueue,
} from './port.ts';

/**
 * The embedded default's bus: JetStream's semantics inside one process, held in memory.
 *
 * It does not survive a crash or a restart: queued jobs, pending retries and the dedup memory are
 * gone with the process. That is acceptable only because the process managers re-derive
 * unfinished work from the event store when they start (decision 7); nothing may rely on this
 * queue as the record of what is left to do.
 */

interface PendingJob {
  id: string;
  /** Kept as JSON so every delivery gets a fresh copy, exactly as off the wire. */
  body: string;
  deliveries: number;
}

interface QueueState {
  ready: PendingJob[];
  consumers: Set<InProcessConsumer>;
}

export interface InProcessWorkQueueOptions {
  /** Matches the JetStream stream's duplicate window. Default 2 minutes. */
  dedupWindowMs?: number;
}

export class InProcessWorkQueue implements WorkQueue {
  readonly #queues = new Map<string, QueueState>();
  /** `queue/id` → when the id may be published again; insertion order is expiry order. */
  readonly #recentIds = new Map<string, number>();
  readonly #retryTimers = new Set<NodeJS.Timeout>();
  readonly #dedupWindowMs: number;
  #closing: Promise<void> | undefined;

  constructor(options: InProcessWorkQueueOptions = {}) {
    this.#dedupWindowMs = options.dedupWindowMs ?? DEFAULT_DEDUP_WINDOW_MS;
  }

  async publish(queue: string, job: Job): Promise<void> {
    assertQueueName(queue);
    this.#assertOpen();
    const now = performance.now();
    for (const [key, expiresAt] of this.#recentIds) {
      if (expiresAt > now) break;
      this.#recentIds.delete(key);
    }
    const key = `${queue}/${job.id}`;
    if (this.#recentIds.has(key)) return;
    this.#recentIds.set(key, now + this.#dedupWindowMs);
    this.#state(queue).ready.push({ id: job.id, body: JSON.stringify(job.payload), deliveries: 0 });
    this.#dispatch(queue);
  }

  async consume(queue: string, handler: JobHandler, options?: ConsumeOptions): Promise<Consumer> {
    assertQueueName(queue);
    const resolved = resolveConsumeOptions(options);
    this.#assertOpen();
    const state = this.#state(queue);
    const consumer = new InProcessConsumer(handler, resolved, {
      settle: (job, retryInMs) => this.#settle(queue, job, retryInMs),
      detach: () => state.consumers.delete(consumer),
    });
    state.consumers.add(consumer);
    this.#dispatch(queue);
    return consumer;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      const consumers = [...this.#queues.values()].flatMap((state) => [...state.consumers]);
      await Promise.all(consumers.map((consumer) => consumer.close()));
      for (const timer of this.#retryTimers) clearTimeout(timer);
      this.#retryTimers.clear();
      this.#queues.clear();
      this.#recentIds.clear();
    })();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closing) throw new Error('work queue is closed');
  }

  #state(queue: string): QueueState {
    let state = this.#queues.get(queue);
    if (!state) {
      state = { ready: [], consumers: new Set() };
      this.#queues.set(queue, state);
    }
    return state;
  }

  #dispatch(queue: string): void {
    const state = this.#queues.get(queue);
    if (!state) return;
    for (const consumer of state.consumers) {
      while (state.ready.length > 0 && consumer.hasCapacity()) consumer.run(state.ready.shift()!);
    }
  }

  /** Called when a handler finished; an undefined delay means acked. */
  #settle(queue: string, job: PendingJob, retryInMs: number | undefined): void {
    if (retryInMs !== undefined && !this.#closing) {
      const timer = setTimeout(
        () => {
          this.#retryTimers.delete(timer);
          this.#state(queue).ready.push(job);
          this.#dispatch(queue);
        },
        Math.max(0, retryInMs),
      );
      this.#retryTimers.add(timer);
    }
    this.#dispatch(queue);
  }
}

interface ConsumerHooks {
  settle(job: PendingJob, retryInMs: number | undefined): void;
  detach(): void;
}

class InProcessConsumer implements Consumer {
  #running = 0;
  #closing = false;
  #drained: (() => void) | undefined;
  #closed: Promise<void> | undefined;

  constructor(
    private readonly handler: JobHandler,
    private readonly options: ResolvedConsumeOptions,
    private readonly hooks: ConsumerHooks,
  ) {}

  hasCapacity(): boolean {
    return !this.#closing && this.#running < this.options.concurrency;
  }

  run(job: PendingJob): void {
    this.#running++;
    job.deliveries++;
    const delivery = { id: job.id, payload: JSON.parse(job.body) as Record<string, unknown>, attempt: job.deliveries };
    void runHandler(this.handler, delivery, this.options).then((outcome) => {
      this.#running--;
      this.hooks.settle(job, 'retryInMs' in outcome ? outcome.retryInMs : undefined);
      if (this.#running === 0) this.#drained?.();
    });
  }

  close(): Promise<void> {
    this.#closed ??= new Promise<void>((resolve) => {
      this.#closing = true;
      this.hooks.detach();
      if (this.#running === 0) resolve();
      else this.#drained = resolve;
    });
    return this.#closed;
  }
}
