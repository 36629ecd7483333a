import { setTimeout as sleep } from 'node:timers/promises';
import {
  ANY,
  BACKWARDS,
  END,
  EventStoreDBClient,
  NO_STREAM,
  START,
  STREAM_EXISTS,
  StreamNotFoundError,
  WrongExpectedVersionError,
  excludeSystemEvents,
  jsonEvent,
  type AllStreamResolvedEvent,
  type AllStreamSubscription,
  type AppendExpectedRevision,
  type ReadPosition,
  type ResolvedEvent,
  type StreamingRead,
} from '@eventstore/db-client';
import {
  WrongExpectedRevision,
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpectedRevision,
  type ReadAllOptions,
  type RecordedEvent,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
} from './port.ts';

/** Our schema version travels in the event metadata under this key and is stripped on read. */
const VERSION_KEY = '$v';
const CONNECT_TIMEOUT_MS = 5000;
const RESUBSCRIBE_DELAY_MS = 1000;

/**
 * The EventStoreDB adapter. The global position is the commit position in `$all`, which is
 * unique per event for appends made through gRPC. System events (`$`-prefixed streams and
 * types) are invisible through this port, as they are not ours.
 */
export class EventStoreDbEventStore implements EventStore {
  private constructor(private readonly client: EventStoreDBClient) {}

  /** Fails at start-up, not on the first command, when the server cannot be reached. */
  static async connect(url: string): Promise<EventStoreDbEventStore> {
    const client = EventStoreDBClient.connectionString(url);
    const probe = client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 });
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        probe.toArray(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`no answer within ${CONNECT_TIMEOUT_MS} ms`)), CONNECT_TIMEOUT_MS);
        }),
      ]);
    } catch (error) {
      await cancelled(probe);
      await client.dispose();
      // The url may carry credentials, so it stays out of the message.
      throw new Error(`EventStoreDB (EVENTSTORE_URL) is not reachable: ${(error as Error).message}`, { cause: error });
    } finally {
      clearTimeout(timer);
    }
    return new EventStoreDbEventStore(client);
  }

  async append(streamId: string, events: EventToAppend[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    try {
      const result = await this.client.appendToStream(
        streamId,
        events.map((e) =>
          jsonEvent({ type: e.type, data: e.data, metadata: { ...e.metadata, [VERSION_KEY]: e.version } }),
        ),
        { expectedRevision: toExpectedRevision(expected) },
      );
      if (!result.position) throw new Error('EventStoreDB returned no position for an append');
      return { revision: Number(result.nextExpectedRevision), position: Number(result.position.commit) };
    } catch (error) {
      if (error instanceof WrongExpectedVersionError) {
        const actual = error.actualVersion === NO_STREAM ? -1 : Number(error.actualVersion);
        throw new WrongExpectedRevision(streamId, expected, actual);
      }
      throw error;
    }
  }

  /** Stream by stream, all at once: an append to EventStoreDB is of one stream. */
  appendMany(appends: readonly StreamAppend[]): Promise<PromiseSettledResult<AppendResult>[]> {
    return Promise.allSettled(appends.map((a) => this.append(a.streamId, a.events, a.expected)));
  }

  async readStream(streamId: string, fromRevision = 0): Promise<RecordedEvent[]> {
    const events: RecordedEvent[] = [];
    try {
      for await (const resolved of this.client.readStream(streamId, { fromRevision: BigInt(fromRevision) })) {
        const event = toRecorded(resolved);
        if (event) events.push(event);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  }

  /** `$all` reads cannot be filtered by the server in this client version, so the prefix is applied here. */
  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const after = options.after ?? 0;
    const limit = options.limit ?? 1000;
    const events: RecordedEvent[] = [];
    if (limit <= 0) return events;
    const read = this.client.readAll({ fromPosition: toReadPosition(after) });
    try {
      for await (const resolved of read) {
        const event = toRecorded(resolved);
        if (!event || event.position <= after) continue;
        if (options.streamPrefix !== undefined && !event.streamId.startsWith(options.streamPrefix)) continue;
        events.push(event);
        if (events.length === limit) break;
      }
    } finally {
      await cancelled(read);
    }
    return events;
  }

  async headPosition(): Promise<number> {
    const read = this.client.readAll({ direction: BACKWARDS, fromPosition: END });
    try {
      for await (const resolved of read) {
        const event = toRecorded(resolved);
        if (event) return event.position;
      }
      return 0;
    } finally {
      await cancelled(read);
    }
  }

  /**
   * A catch-up subscription, resubscribed from the last delivered position after an error (a
   * failed `onEvents` included), so a batch is delivered again rather than lost.
   */
  subscribeToAll(options: SubscribeOptions): Subscription {
    let position = options.after ?? 0;
    const batchSize = options.batchSize ?? 500;
    const stop = new AbortController();
    const types = options.types ? new Set(options.types) : null;
    const deliver = async (events: RecordedEvent[]) => {
      const upTo = events[events.length - 1]!.position;
      await options.onEvents(types ? events.filter((e) => types.has(e.type)) : events, upTo);
      position = upTo;
    };
    const loop = (async () => {
      while (!stop.signal.aborted) {
        try {
          const subscription = this.client.subscribeToAll({
            fromPosition: toReadPosition(position),
            filter: excludeSystemEvents(),
          });
          try {
            await follow(subscription, batchSize, () => position, deliver, stop.signal);
          } finally {
            await cancelled(subscription);
          }
        } catch (error) {
          if (!stop.signal.aborted) options.onError?.(error);
        }
        await sleep(RESUBSCRIBE_DELAY_MS, undefined, { signal: stop.signal }).catch(() => {});
      }
    })();
    return {
      close: async () => {
        stop.abort();
        await loop;
      },
    };
  }

  async close(): Promise<void> {
    await this.client.dispose();
  }
}

/**
 * Hands one subscription's events to `deliver` in batches of what has already arrived, awaiting
 * each. Returns when the server ends the subscription or `signal` aborts; throws on its errors.
 */
async function follow(
  subscription: AllStreamSubscription,
  batchSize: number,
  delivered: () => number,
  deliver: (events: RecordedEvent[]) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  let failure: unknown;
  let ended = false;
  let wake = () => {};
  const poke = () => wake();
  // Attached for the subscription's whole life: an 'error' with no listener would crash the process.
  subscription.on('error', (error) => {
    failure = error;
    wake();
  });
  subscription.on('end', () => {
    ended = true;
    wake();
  });
  subscription.on('readable', poke);
  signal.addEventListener('abort', poke);
  try {
    while (!signal.aborted) {
      if (failure) throw failure;
      const batch: RecordedEvent[] = [];
      while (batch.length < batchSize) {
        const resolved: AllStreamResolvedEvent | null = subscription.read();
        if (resolved === null) break;
        const event = toRecorded(resolved);
        // A resubscription may start at the last delivered event itself.
        if (event && event.position > delivered()) batch.push(event);
      }
      if (batch.length > 0) {
        await deliver(batch);
        continue;
      }
      if (ended) return;
      await new Promise<void>((resolve) => {
        wake = resolve;
      });
      wake = () => {};
    }
  } finally {
    signal.removeEventListener('abort', poke);
  }
}

/**
 * Ends the server call behind a read or subscription. A call that never started rejects here
 * with the error its reader already saw, so that rejection is dropped.
 */
async function cancelled(call: StreamingRead<unknown> | AllStreamSubscription): Promise<void> {
  await ('unsubscribe' in call ? call.unsubscribe() : call.cancel()).catch(() => {});
}

function toExpectedRevision(expected: ExpectedRevision): AppendExpectedRevision {
  switch (expected) {
    case 'no_stream':
      return NO_STREAM;
    case 'exists':
      return STREAM_EXISTS;
    case 'any':
      return ANY;
    default:
      return BigInt(expected);
  }
}

function toReadPosition(after: number): ReadPosition {
  return after > 0 ? { commit: BigInt(after), prepare: BigInt(after) } : START;
}

/** Our view of a stored event, or null for what this port does not expose (system and binary events). */
function toRecorded(resolved: ResolvedEvent | AllStreamResolvedEvent): RecordedEvent | null {
  const event = resolved.event;
  if (!event?.isJson || event.streamId.startsWith('$') || event.type.startsWith('$')) return null;
  const commit = event.position?.commit ?? resolved.commitPosition;
  if (commit === undefined)
    throw new Error('EventStoreDB returned an event without a position (server older than 22.6?)');
  const { [VERSION_KEY]: version, ...metadata } = isRecord(event.metadata) ? event.metadata : {};
  return {
    streamId: event.streamId,
    revision: Number(event.revision),
    position: Number(commit),
    type: event.type,
    // Events written by other tools carry no version; they are the first version of their type.
    version: typeof version === 'number' ? version : 1,
    data: event.data as Record<string, unknown>,
    metadata,
    recordedAt: event.created,
  };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}
