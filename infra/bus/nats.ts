import { setTimeout as sleep } from 'node:timers/promises';
import {
  AckPolicy,
  connect,
  DeliverPolicy,
  JSONCodec,
  NatsError,
  nanos,
  RetentionPolicy,
  StorageType,
  type Consumer as JsConsumer,
  type ConsumerMessages,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
  type NatsConnection,
} from 'nats';
import {
  assertQueueName,
  DEFAULT_DEDUP_WINDOW_MS,
  resolveConsumeOptions,
  runHandler,
  type Consumer,
  type ConsumeOptions,
  type Delivery,
  type Job,
  type JobHandler,
  type ResolvedConsumeOptions,
  type WorkQueue,
} from './port.ts';

export interface NatsWorkQueueOptions {
  /** The one stream holding every queue's work. Default `WORK`. */
  streamName?: string;
  /** Queue `q` is the subject `<subjectPrefix>.work.q`. Default `wms`. */
  subjectPrefix?: string;
  /**
   * How long a delivered job may go without an ack or a heartbeat before it is redelivered: the
   * time to notice a crashed consumer. Running handlers heartbeat, so it does not bound them.
   */
  ackWaitMs?: number;
  /** The stream's duplicate window; applied only when this call creates the stream. */
  dedupWindowMs?: number;
  /** Pause between attempts to reach a lost server. Default 2,000 ms. */
  reconnectWaitMs?: number;
  /**
   * How long a publish, or an ack that waits for its confirmation, waits for the server before it
   * fails (while the server is away, the call waits this long). Default nats.js's 5,000 ms.
   */
  requestTimeoutMs?: number;
}

const STREAM_NOT_FOUND = 10059;
const CONSUMER_NOT_FOUND = 10014;
/** How long one pull request waits on the server; an idle worker renews it this often. */
const PULL_EXPIRES_MS = 5_000;
/** Pause after a failed pull, so a lost server is not hammered. */
const PULL_FAILURE_PAUSE_MS = 1_000;

interface WireJob {
  id: string;
  payload: Record<string, unknown>;
}

const codec = JSONCodec<WireJob>();

/**
 * JetStream work queues: one work-queue stream, one durable pull consumer per queue (explicit
 * ack, nak with delay for retries), so jobs outlive every process and are redelivered when a
 * consumer dies holding them.
 */
export class NatsWorkQueue implements WorkQueue {
  readonly #consumers = new Set<NatsConsumer>();
  #closing: Promise<void> | undefined;

  private constructor(
    private readonly nc: NatsConnection,
    private readonly js: JetStreamClient,
    private readonly jsm: JetStreamManager,
    private readonly streamName: string,
    private readonly subjectPrefix: string,
    private readonly ackWaitMs: number,
  ) {}

  static async connect(url: string, options: NatsWorkQueueOptions = {}): Promise<NatsWorkQueue> {
    const streamName = options.streamName ?? 'WORK';
    const subjectPrefix = options.subjectPrefix ?? 'wms';
    // Reconnect for as long as it takes: nats.js gives up after 10 attempts by default, and a
    // closed connection would leave the process unable to queue work until it is restarted.
    const nc = await connect({
      servers: url,
      name: 'workspace-mail-service',
      maxReconnectAttempts: -1,
      reconnectTimeWait: options.reconnectWaitMs ?? 2_000,
    });
    try {
      const jsm = await nc.jetstreamManager();
      try {
        await jsm.streams.info(streamName);
      } catch (error) {
        if (apiErrorCode(error) !== STREAM_NOT_FOUND) throw error;
        await jsm.streams.add({
          name: streamName,
          subjects: [`${subjectPrefix}.work.>`],
          retention: RetentionPolicy.Workqueue,
          storage: StorageType.File,
          duplicate_window: nanos(options.dedupWindowMs ?? DEFAULT_DEDUP_WINDOW_MS),
        });
      }
      return new NatsWorkQueue(
        nc,
        nc.jetstream({ timeout: options.requestTimeoutMs ?? 5_000 }),
        jsm,
        streamName,
        subjectPrefix,
        options.ackWaitMs ?? 30_000,
      );
    } catch (error) {
      await nc.close();
      throw error;
    }
  }

  async publish(queue: string, job: Job): Promise<void> {
    assertQueueName(queue);
    this.#assertOpen();
    // The msg id is scoped by queue because JetStream de-duplicates across the whole stream.
    await this.js.publish(this.#subject(queue), codec.encode({ id: job.id, payload: job.payload }), {
      msgID: `${queue}:${job.id}`,
      expect: { streamName: this.streamName },
    });
  }

  async consume(queue: string, handler: JobHandler, options?: ConsumeOptions): Promise<Consumer> {
    assertQueueName(queue);
    const resolved = resolveConsumeOptions(options);
    this.#assertOpen();
    await this.#ensureDurable(queue);
    const source = await this.js.consumers.get(this.streamName, queue);
    const consumer = new NatsConsumer(this.nc, source, handler, resolved, this.ackWaitMs, () =>
      this.#consumers.delete(consumer),
    );
    this.#consumers.add(consumer);
    return consumer;
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      await Promise.all([...this.#consumers].map((consumer) => consumer.close()));
      await this.nc.drain();
    })();
    return this.#closing;
  }

  #assertOpen(): void {
    if (this.#closing) throw new Error('work queue is closed');
  }

  #subject(queue: string): string {
    return `${this.subjectPrefix}.work.${queue}`;
  }

  /** Creates the queue's durable consumer, or brings its ack wait in line with this process's. */
  async #ensureDurable(queue: string): Promise<void> {
    const ackWait = nanos(this.ackWaitMs);
    try {
      const info = await this.jsm.consumers.info(this.streamName, queue);
      if (info.config.ack_wait !== ackWait)
        await this.jsm.consumers.update(this.streamName, queue, { ack_wait: ackWait });
    } catch (error) {
      if (apiErrorCode(error) !== CONSUMER_NOT_FOUND) throw error;
      await this.jsm.consumers.add(this.streamName, {
        durable_name: queue,
        filter_subject: this.#subject(queue),
        ack_policy: AckPolicy.Explicit,
        ack_wait: ackWait,
        deliver_policy: DeliverPolicy.All,
        // Retrying for ever is deliberate: giving up is the handler's decision (see JobOutcome).
        max_deliver: -1,
      });
    }
  }
}

/**
 * `concurrency` workers, each holding at most one pull request for one message, so a consumer
 * never holds more jobs than it can run: a fetched job that waits in a local buffer would burn its
 * ack wait and be redelivered elsewhere while still queued here.
 */
class NatsConsumer implements Consumer {
  readonly #pulls = new Set<ConsumerMessages>();
  readonly #stop = new AbortController();
  readonly #workers: Promise<void>[];
  #closed: Promise<void> | undefined;

  constructor(
    private readonly nc: NatsConnection,
    private readonly source: JsConsumer,
    private readonly handler: JobHandler,
    private readonly options: ResolvedConsumeOptions,
    private readonly ackWaitMs: number,
    private readonly onClosed: () => void,
  ) {
    this.#workers = Array.from({ length: options.concurrency }, () => this.#work());
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#stop.abort();
      for (const pull of this.#pulls) pull.stop();
      await Promise.all(this.#workers);
      // Naks are fire-and-forget; flushing makes "settled" true before close resolves.
      await this.nc.flush().catch((error: unknown) => this.options.onError(error, undefined));
      this.onClosed();
    })();
    return this.#closed;
  }

  async #work(): Promise<void> {
    while (!this.#stop.signal.aborted) {
      try {
        const pull = await this.source.fetch({ max_messages: 1, expires: PULL_EXPIRES_MS });
        this.#pulls.add(pull);
        if (this.#stop.signal.aborted) pull.stop();
        try {
          for await (const msg of pull) {
            // A message already on its way when close began goes straight back for someone else.
            if (this.#stop.signal.aborted) msg.nak();
            else await this.#handle(msg);
          }
        } finally {
          this.#pulls.delete(pull);
        }
      } catch (error) {
        if (this.#stop.signal.aborted) return;
        this.options.onError(error, undefined);
        await sleep(PULL_FAILURE_PAUSE_MS, undefined, { signal: this.#stop.signal }).catch(() => {});
      }
    }
  }

  async #handle(msg: JsMsg): Promise<void> {
    let job: Delivery;
    try {
      const wire = codec.decode(msg.data);
      job = { id: wire.id, payload: wire.payload, attempt: msg.info.redeliveryCount };
    } catch (error) {
      // Not something publish() wrote: redelivering it would fail the same way for ever.
      this.options.onError(error, undefined);
      msg.term();
      return;
    }
    const heartbeat = setInterval(
      () => {
        try {
          msg.working();
        } catch (error) {
          // A lost connection: the server will redeliver after the ack wait whatever we do here.
          this.options.onError(error, job);
        }
      },
      Math.max(100, this.ackWaitMs / 3),
    );
    const outcome = await runHandler(this.handler, job, this.options).finally(() => clearInterval(heartbeat));
    try {
      if ('retryInMs' in outcome) msg.nak(outcome.retryInMs);
      else await msg.ackAck();
    } catch (error) {
      // The job stays pending on the server and comes back after the ack wait.
      this.options.onError(error, job);
    }
  }
}

function apiErrorCode(error: unknown): number | undefined {
  return error instanceof NatsError ? error.api_error?.err_code : undefined;
}
