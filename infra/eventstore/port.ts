import type { RawBuilder } from 'kysely';

/**
 * The event store port. Two adapters implement it (PostgreSQL, EventStoreDB) and one contract
 * suite (test/eventstore.contract.ts) holds both to it.
 */

/** What the writer believed about the stream: a revision, or one of the three loose forms. */
export type ExpectedRevision = number | 'no_stream' | 'exists' | 'any';

export interface EventToAppend {
  type: string;
  /** Schema version of `data`; readers upcast older versions. */
  version: number;
  data: Record<string, unknown>;
  metadata?: Record<string, unknown>;
}

export interface RecordedEvent {
  streamId: string;
  /** 0-based position of the event within its stream. */
  revision: number;
  /** Position in the whole store; strictly increasing in the order subscribers see events. */
  position: number;
  type: string;
  version: number;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  recordedAt: Date;
}

export interface AppendResult {
  /** Revision of the last event written. */
  revision: number;
  /** Global position of the last event written. */
  position: number;
}

export class WrongExpectedRevision extends Error {
  constructor(
    readonly streamId: string,
    readonly expected: ExpectedRevision,
    /** -1 when the stream does not exist. */
    readonly actual: number,
  ) {
    super(`stream ${streamId}: expected revision ${expected}, actual ${actual}`);
    this.name = 'WrongExpectedRevision';
  }
}

/** A row of `EventStore.eventsInPlace`: an event as stored, before any upcast. */
export interface EventInPlace {
  position: string;
  type: string;
  version: number;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

export interface ReadAllOptions {
  /** Exclusive: events after this position. 0 reads from the start. */
  after?: number;
  limit?: number;
  /** Only streams whose id starts with this prefix (a workspace's streams, for audit replay). */
  streamPrefix?: string;
}

export interface ScanOptions {
  /** Exclusive. */
  after: number;
  /**
   * Inclusive, and a position readers have already seen (a checkpoint or `headPosition`), so no
   * event at or below it is still being written.
   */
  until: number;
  /** Only events of these types (a projector's `handles`). */
  types: readonly string[];
  batchSize?: number;
}

export interface Subscription {
  close(): Promise<void>;
}

export interface SubscribeOptions {
  after?: number;
  /**
   * Only events of these types are handed over (all when absent). A subscriber that handles a few
   * types then skips the rest of the log where it lies, instead of reading and parsing it.
   */
  types?: readonly string[];
  /**
   * Called with batches in position order; the next batch waits for the returned promise. `upTo`
   * is how far the log has been read (at least the last event's position): with `types` a stretch
   * of the log may hold none of them, and the subscriber still learns it has passed it.
   */
  onEvents(events: RecordedEvent[], upTo: number): Promise<void>;
  onError?(error: unknown): void;
  batchSize?: number;
}

/** One stream's part of `EventStore.appendMany`. */
export interface StreamAppend {
  streamId: string;
  events: EventToAppend[];
  expected: ExpectedRevision;
}

export interface EventStore {
  append(streamId: string, events: EventToAppend[], expected: ExpectedRevision): Promise<AppendResult>;
  /**
   * Appends to many streams at once (a page of an import: a new stream per row), each as `append`
   * would, with its own expectation: one refused (`WrongExpectedRevision` in its place) leaves the
   * others written. Not one transaction over all of them; an adapter may send them together.
   */
  appendMany(appends: readonly StreamAppend[]): Promise<PromiseSettledResult<AppendResult>[]>;
  /** Events of one stream from `fromRevision` (inclusive); empty when the stream does not exist. */
  readStream(streamId: string, fromRevision?: number): Promise<RecordedEvent[]>;
  readAll(options?: ReadAllOptions): Promise<RecordedEvent[]>;
  /**
   * Optional, for projection rebuilds: the events of some types in (after, until], in position
   * order, in large batches. A store without it is read with `readAll` pages.
   */
  scanAll?(options: ScanOptions): AsyncIterable<RecordedEvent[]>;
  /**
   * Optional, for `projections status`: how many events of some types lie in (after, until]. A
   * store without it is counted with `readAll` pages.
   */
  countAll?(options: Omit<ScanOptions, 'batchSize'>): Promise<number>;
  /**
   * Optional, for a store whose log is a table in the read models' own database: the events of
   * some types in (after, until] as an SQL relation there (columns `position`, `type`, `version`,
   * `data`, `metadata`), so a rebuild can replay them where they lie (a projector's `BulkLoad`)
   * instead of reading them out and writing them back.
   */
  eventsInPlace?(options: Omit<ScanOptions, 'batchSize'>): RawBuilder<EventInPlace>;
  /** Position of the newest event a subscriber may see now (0 when the store is empty). */
  headPosition(): Promise<number>;
  subscribeToAll(options: SubscribeOptions): Subscription;
  close(): Promise<void>;
}
