import { sql, type RawBuilder } from 'kysely';
import type pg from 'pg';
import {
  WrongExpectedRevision,
  type AppendResult,
  type EventInPlace,
  type EventStore,
  type EventToAppend,
  type ExpectedRevision,
  type ReadAllOptions,
  type RecordedEvent,
  type ScanOptions,
  type StreamAppend,
  type SubscribeOptions,
  type Subscription,
} from './port.ts';
import { EVENT_STORE_SCHEMA } from './postgres-schema.ts';
import { scanEvents } from './postgres-scan.ts';
import { LogTail, type TailEvent } from './postgres-tail.ts';

export { EVENT_STORE_SCHEMA };

/** Bounds of one es_append call; a queue longer than this goes out in several calls. */
const MAX_APPENDS_PER_CALL = 500;
const MAX_EVENTS_PER_CALL = 2000;

interface QueuedAppend {
  streamId: string;
  events: EventToAppend[];
  /** Each event's data and metadata as JSON, serialised once when the append is queued. */
  data: string[];
  metadata: string[];
  expected: ExpectedRevision;
  resolve(result: AppendResult): void;
  reject(error: unknown): void;
}

export interface PostgresEventStoreOptions {
  /** How often a live subscription looks for appends made by other processes. */
  pollMs?: number;
  /** es_append calls in flight at once; appends arriving meanwhile queue and go out together. */
  concurrentAppends?: number;
  /** Recent events the shared tail keeps in memory for live subscriptions, and at most their stored bytes. */
  tailEvents?: number;
  tailBytes?: number;
}

const VISIBLE = 'tx_id < pg_snapshot_xmin(pg_current_snapshot())';
/** Positions one catch-up read of some types spans at most. */
const CATCH_UP_SPAN = 50_000;
const COLUMNS = 'stream_id, revision, position, type, version, data, metadata, recorded_at';

export class PostgresEventStore implements EventStore {
  private readonly tail: LogTail;
  private readonly pollMs: number;
  private readonly concurrentAppends: number;
  private readonly queued: QueuedAppend[] = [];
  private appending = 0;

  constructor(
    private readonly pool: pg.Pool,
    options: PostgresEventStoreOptions = {},
  ) {
    this.pollMs = options.pollMs ?? 50;
    this.concurrentAppends = options.concurrentAppends ?? 2;
    this.tail = new LogTail(
      { read: (after, limit) => this.readTail(after, limit), head: () => this.headPosition() },
      this.pollMs,
      options.tailEvents,
      options.tailBytes,
    );
  }

  /**
   * Deletes whole streams: retention of what must not be kept (expired contact events, expired
   * disposable inboxes). A stream's end is its newest event, so a deleted stream is a new one
   * again. Answers how many events went.
   */
  static async deleteStreams(pool: pg.Pool, streamIds: readonly string[]): Promise<number> {
    const deleted = await pool.query('DELETE FROM es_events WHERE stream_id = ANY($1)', [streamIds]);
    return deleted.rowCount ?? 0;
  }

  static async migrate(db: pg.Pool | pg.PoolClient): Promise<void> {
    await db.query(EVENT_STORE_SCHEMA);
  }

  /**
   * Appends go out at once while fewer than `concurrentAppends` calls are in flight; beyond that
   * they queue, and the next free call carries the whole queue in one statement and one commit.
   * Under load that turns many small transactions (each a round trip, a commit and a WAL flush)
   * into few larger ones; a lone append waits for nobody.
   */
  append(streamId: string, events: EventToAppend[], expected: ExpectedRevision): Promise<AppendResult> {
    const queued = this.enqueue({ streamId, events, expected });
    this.sendQueued();
    return queued;
  }

  /**
   * All queued before any is sent, so they go out together (in one call when within its bounds),
   * not the first alone in each free call and the rest behind it.
   */
  appendMany(appends: readonly StreamAppend[]): Promise<PromiseSettledResult<AppendResult>[]> {
    const queued = appends.map((a) => this.enqueue(a));
    this.sendQueued();
    return Promise.allSettled(queued);
  }

  private enqueue({ streamId, events, expected }: StreamAppend): Promise<AppendResult> {
    if (events.length === 0) return Promise.reject(new Error('append needs at least one event'));
    const data = events.map((e) => JSON.stringify(e.data));
    const metadata = events.map((e) => JSON.stringify(e.metadata ?? {}));
    // Refused here, alone, what PostgreSQL would refuse for the whole call the append joins.
    if (
      streamId.includes('\u0000') ||
      events.some((e) => e.type.includes('\u0000')) ||
      data.some(unstorableJson) ||
      metadata.some(unstorableJson)
    ) {
      return Promise.reject(new UnstorableAppend(streamId));
    }
    return new Promise((resolve, reject) => {
      this.queued.push({ streamId, events, data, metadata, expected, resolve, reject });
    });
  }

  private sendQueued(): void {
    while (this.appending < this.concurrentAppends && this.queued.length > 0) {
      let n = 0;
      let count = 0;
      while (n < this.queued.length && n < MAX_APPENDS_PER_CALL) {
        const size = this.queued[n]!.events.length;
        if (n > 0 && count + size > MAX_EVENTS_PER_CALL) break;
        count += size;
        n++;
      }
      this.appending++;
      void this.send(this.queued.splice(0, n)).finally(() => {
        this.appending--;
        this.sendQueued();
      });
    }
  }

  private async send(appends: QueuedAppend[]): Promise<void> {
    const events = appends.flatMap((a) => a.events);
    let rows: { out_revision: number | null; out_position: string | null; out_actual: number }[];
    try {
      ({ rows } = await this.pool.query({
        // A named statement: each pooled connection parses and plans the call once, not per append.
        name: 'es_append',
        text: 'SELECT out_revision, out_position, out_actual FROM es_append($1, $2, $3, $4, $5, $6, $7::jsonb, $8::jsonb)',
        values: [
          appends.map((a) => a.streamId),
          appends.map((a) => (typeof a.expected === 'number' ? 'revision' : a.expected)),
          appends.map((a) => (typeof a.expected === 'number' ? a.expected : null)),
          appends.map((a) => a.events.length),
          events.map((e) => e.type),
          events.map((e) => e.version),
          // One JSON array each rather than arrays of jsonb: pg writes an array parameter by
          // escaping every element's quotes, a copy of each event's JSON (docs/decisions/event-sourcing.md).
          `[${appends.flatMap((a) => a.data).join(',')}]`,
          `[${appends.flatMap((a) => a.metadata).join(',')}]`,
        ],
      }));
    } catch (error) {
      if (appends.length > 1 && refusedInput(error)) {
        // Something in one append that `append` did not catch fails the whole call, which wrote
        // nothing: halves go again until the refused appends stand alone, so only they fail.
        const half = Math.ceil(appends.length / 2);
        await this.send(appends.slice(0, half));
        await this.send(appends.slice(half));
        return;
      }
      for (const a of appends) a.reject(error);
      return;
    }
    this.tail.wake(Math.max(...rows.map((r) => Number(r.out_position ?? -1))));
    appends.forEach((a, i) => {
      const row = rows[i]!;
      if (row.out_revision === null) a.reject(new WrongExpectedRevision(a.streamId, a.expected, row.out_actual));
      else a.resolve({ revision: row.out_revision, position: Number(row.out_position) });
    });
  }

  async readStream(streamId: string, fromRevision = 0): Promise<RecordedEvent[]> {
    // Named, like es_append: every command reads its stream first, so this is the hottest query.
    const { rows } = await this.pool.query<EventRow>({
      name: 'es_read_stream',
      text: `SELECT ${COLUMNS} FROM es_events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision`,
      values: [streamId, fromRevision],
    });
    return rows.map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const params: unknown[] = [options.after ?? 0, options.limit ?? 1000];
    let prefix = '';
    if (options.streamPrefix !== undefined) {
      params.push(`${options.streamPrefix.replace(/[\\%_]/g, (c) => `\\${c}`)}%`);
      prefix = 'AND stream_id LIKE $3';
    }
    const { rows } = await this.pool.query<EventRow>(
      `SELECT ${COLUMNS} FROM es_events WHERE position > $1 AND ${VISIBLE} ${prefix} ORDER BY position LIMIT $2`,
      params,
    );
    return rows.map(toRecorded);
  }

  /** `readAll` for the shared tail, with each event's stored size, which bounds its memory. */
  private async readTail(after: number, limit: number): Promise<TailEvent[]> {
    const { rows } = await this.pool.query<EventRow & { bytes: number }>({
      name: 'es_read_tail',
      text: `SELECT ${COLUMNS}, pg_column_size(data) + pg_column_size(metadata) AS bytes FROM es_events
        WHERE position > $1 AND ${VISIBLE} ORDER BY position LIMIT $2`,
      values: [after, limit],
    });
    return rows.map((row) => ({ event: toRecorded(row), bytes: row.bytes }));
  }

  /** A rebuild's read, kept in its own file apart from the live subscription below. */
  scanAll(options: ScanOptions): AsyncIterable<RecordedEvent[]> {
    return scanEvents(this.pool, options);
  }

  /**
   * No visibility test: `until` is a position readers have seen, and every position at or below
   * the visible head is settled (postgres-schema.ts).
   */
  eventsInPlace(options: Omit<ScanOptions, 'batchSize'>): RawBuilder<EventInPlace> {
    return sql<EventInPlace>`(SELECT position, type, version, data, metadata FROM es_events
      WHERE position > ${options.after} AND position <= ${options.until} AND type = ANY(${[...options.types]}))`;
  }

  async countAll(options: Omit<ScanOptions, 'batchSize'>): Promise<number> {
    const { rows } = await this.pool.query(
      `SELECT count(*) AS n FROM es_events WHERE position > $1 AND position <= $2 AND type = ANY($3) AND ${VISIBLE}`,
      [options.after, options.until, [...options.types]],
    );
    return Number(rows[0].n);
  }

  async headPosition(): Promise<number> {
    const { rows } = await this.pool.query(
      `SELECT position FROM es_events WHERE ${VISIBLE} ORDER BY position DESC LIMIT 1`,
    );
    return Number(rows[0]?.position ?? 0);
  }

  /**
   * Catches up with its own reads of the table, then takes its batches from the shared tail
   * (postgres-tail.ts); it falls back to its own reads whenever it lags further than the tail
   * remembers. With `types`, its own reads leave the other types in the table (catchUpPage).
   */
  subscribeToAll(options: SubscribeOptions): Subscription {
    let position = options.after ?? 0;
    let closed = false;
    const closing = new AbortController();
    const batchSize = options.batchSize ?? 500;
    const types = options.types ? new Set(options.types) : null;
    const leave = this.tail.join(options.onError);
    const next = async (): Promise<{ events: RecordedEvent[]; upTo: number }> => {
      const recent = this.tail.slice(position, batchSize);
      if (recent === null && options.types) return this.catchUpPage(position, options.types, batchSize);
      const events = recent ?? (await this.readAll({ after: position, limit: batchSize }));
      if (events.length === 0) return { events, upTo: position };
      const upTo = events[events.length - 1]!.position;
      return { events: types ? events.filter((e) => types.has(e.type)) : events, upTo };
    };
    const loop = (async () => {
      while (!closed) {
        try {
          const { events, upTo } = await next();
          if (closed) break;
          if (upTo > position) {
            await options.onEvents(events, upTo);
            position = upTo;
            continue;
          }
        } catch (error) {
          if (closed) break;
          options.onError?.(error);
          await new Promise((resolve) => setTimeout(resolve, this.pollMs));
          continue;
        }
        await this.tail.waitPast(position, 1000, closing.signal);
      }
    })();
    return {
      close: async () => {
        closed = true;
        closing.abort();
        leave();
        await loop;
      },
    };
  }

  /**
   * A catching-up subscriber's read of some types: at most CATCH_UP_SPAN positions past `after`
   * and never past the visible head, so a stretch holding none of its types costs one bounded
   * index range scan and still moves it on. Every position at or below the head is settled (see
   * postgres-schema.ts), so the bound needs no visibility test per row.
   */
  private async catchUpPage(
    after: number,
    types: readonly string[],
    limit: number,
  ): Promise<{ events: RecordedEvent[]; upTo: number }> {
    const until = Math.min(await this.headPosition(), after + CATCH_UP_SPAN);
    if (until <= after) return { events: [], upTo: after };
    const { rows } = await this.pool.query(
      `SELECT ${COLUMNS} FROM es_events WHERE position > $1 AND position <= $2 AND type = ANY($3)
       ORDER BY position LIMIT $4`,
      [after, until, types, limit],
    );
    const events = rows.map(toRecorded);
    return { events, upTo: events.length === limit ? events[limit - 1]!.position : until };
  }

  async close(): Promise<void> {}
}

/**
 * PostgreSQL refused what a call carried (SQLSTATE class 22, data exception: a value out of its
 * column's range, say; class 54, a program limit such as a call's JSON past 256 MB), before
 * anything was written. A lost connection or a timeout is not such a refusal: resending could
 * then append twice.
 */
/**
 * NUL and unpaired surrogates, which jsonb refuses, as JSON.stringify writes them: `\u0000` and
 * `\udXXX` (it writes a whole pair as the character itself), after an even run of backslashes (an
 * odd one escapes the backslash, not the character). Most JSON holds no `\u` at all.
 */
const UNSTORABLE_ESCAPE = /(?<!\\)(?:\\\\)*\\u(?:0000|d[89a-f][0-9a-f]{2})/;
const unstorableJson = (json: string) => json.includes('\\u') && UNSTORABLE_ESCAPE.test(json);

/** An append holding a string PostgreSQL cannot store (NUL, an unpaired surrogate); nothing was written. */
export class UnstorableAppend extends Error {
  constructor(readonly streamId: string) {
    super(`stream ${streamId}: an event holds a string PostgreSQL cannot store (NUL or an unpaired surrogate)`);
    this.name = 'UnstorableAppend';
  }
}

function refusedInput(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('22') || code.startsWith('54'));
}

/** A row of es_events as COLUMNS selects it. */
type EventRow = {
  stream_id: string;
  revision: number;
  position: number | string;
  type: string;
  version: number;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
  recorded_at: Date;
};

function toRecorded(row: EventRow): RecordedEvent {
  return {
    streamId: row.stream_id,
    revision: row.revision,
    position: Number(row.position),
    type: row.type,
    version: row.version,
    data: row.data,
    metadata: row.metadata,
    recordedAt: row.recorded_at,
  };
}
