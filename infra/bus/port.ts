/**
 * The work-queue port the process managers consume from. Two adapters implement it (NATS
 * JetStream, in-process) and one contract suite (test/bus/contract.ts) holds both to it.
 *
 * Delivery is at least once: a job can be redelivered after a crash or a lost ack, and an id is
 * only de-duplicated within the adapter's dedup window. Handlers are therefore idempotent, and the
 * event store, not the bus, says whether work is done.
 */

export interface Job {
  /** De-duplicates publishes: the same id on the same queue within the dedup window is dropped. */
  id: string;
  /** Travels as JSON: what JSON cannot carry (Dates, undefined, class instances) arrives changed. */
  payload: Record<string, unknown>;
}

export interface Delivery extends Job {
  /** 1 on the first delivery, counting every redelivery (retry, throw, crash) after it. */
  attempt: number;
}

/**
 * What the handler made of the job. There is no "give up": the bus retries for ever, so a handler
 * that stops retrying records the failure as an event and acks.
 */
export type JobOutcome = { ack: true } | { retryInMs: number };

export type JobHandler = (job: Delivery) => Promise<JobOutcome>;

export interface ConsumeOptions {
  /** Handlers running at once in this consumer. Default 1. */
  concurrency?: number;
  /** Delay before a job whose handler threw is offered again. Default 5000. */
  retryOnErrorMs?: number;
  /** A handler threw (job given), or the adapter failed to fetch or settle work (no job). */
  onError?: (error: unknown, job: Delivery | undefined) => void;
}

export interface Consumer {
  /** Stops taking work and resolves once the running handlers have finished and been settled. */
  close(): Promise<void>;
}

export interface WorkQueue {
  /** Resolves once the job is stored (durable on NATS) and will be offered to a consumer. */
  publish(queue: string, job: Job): Promise<void>;
  /**
   * Work published while no consumer ran is delivered once one starts. Several consumers of one
   * queue compete for its jobs. A running handler keeps its job for as long as it runs: a handler
   * that can hang bounds its own I/O with timeouts.
   */
  consume(queue: string, handler: JobHandler, options?: ConsumeOptions): Promise<Consumer>;
  /** Closes every consumer (waiting for their handlers), then the connection. */
  close(): Promise<void>;
}

/** Queue names become NATS subject tokens and durable consumer names, so both adapters hold to this. */
export function assertQueueName(queue: string): void {
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(queue)) {
    throw new Error(`queue name must be 1-64 of [A-Za-z0-9_-], got ${JSON.stringify(queue)}`);
  }
}

export const DEFAULT_DEDUP_WINDOW_MS = 120_000;

export interface ResolvedConsumeOptions {
  concurrency: number;
  retryOnErrorMs: number;
  onError: (error: unknown, job: Delivery | undefined) => void;
}

/** Resolves the consume options every adapter applies the same way. */
export function resolveConsumeOptions(options: ConsumeOptions = {}): ResolvedConsumeOptions {
  const concurrency = options.concurrency ?? 1;
  if (!Number.isInteger(concurrency) || concurrency < 1)
    throw new Error(`concurrency must be a positive integer, got ${concurrency}`);
  const retryOnErrorMs = options.retryOnErrorMs ?? 5_000;
  if (!Number.isFinite(retryOnErrorMs) || retryOnErrorMs < 0)
    throw new Error(`retryOnErrorMs must be >= 0, got ${retryOnErrorMs}`);
  const report = options.onError ?? (() => {});
  return {
    concurrency,
    retryOnErrorMs,
    // A failing error reporter must not take the consumer down with it.
    onError: (error, job) => {
      try {
        report(error, job);
      } catch {
        /* the reporter's own failure has nowhere better to go */
      }
    },
  };
}

/** Runs a handler so that a throw becomes a retry, the same way in every adapter. */
export async function runHandler(
  handler: JobHandler,
  job: Delivery,
  options: ResolvedConsumeOptions,
): Promise<JobOutcome> {
  try {
    const outcome: unknown = await handler(job);
    if (isOutcome(outcome)) return outcome;
    throw new Error(`handler returned ${JSON.stringify(outcome)}, neither {ack: true} nor {retryInMs}`);
  } catch (error) {
    options.onError(error, job);
    return { retryInMs: options.retryOnErrorMs };
  }
}

function isOutcome(value: unknown): value is JobOutcome {
  if (typeof value !== 'object' || value === null) return false;
  if ('ack' in value) return value.ack === true;
  return (
    'retryInMs' in value &&
    typeof value.retryInMs === 'number' &&
    Number.isFinite(value.retryInMs) &&
    value.retryInMs >= 0
  );
}
