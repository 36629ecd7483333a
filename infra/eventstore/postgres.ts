import type pg from 'pg';
import {
  WrongExpectedRevision,
  type AppendResult,
  type EventStore,
  type EventToAppend,
  type ExpectedRevision,
  type ReadAllOptions,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from './port.ts';

const CONFLICT_STATE = 'ES409';
const POSITION_LOCK = 72_626_001;
/** Key space of the per-stream locks (two-int advisory keys never collide with POSITION_LOCK). */
const STREAM_LOCKS = 72_626_002;

/**
 * Append-only event table with per-stream optimistic concurrency and a global position.
 *
 * The out-of-order-commit gap: positions come from a sequence, and a transaction holding a lower
 * position may commit after one holding a higher position. A subscriber that already moved past
 * the higher one would skip the lower one forever. We close it in two steps:
 *  1. `es_append` takes the transaction id and its positions together under a short session lock,
 *     so position order equals transaction-id order.
 *  2. Readers only see rows whose transaction id is below the snapshot's xmin (every transaction
 *     below it has finished). A row can then only become visible later if its transaction id,
 *     and so its position, is above everything already read.
 * The lock covers a few statements, not the commit, so appends still commit (and fsync) in parallel.
 * Step 1 holds only if the transaction id is first assigned inside that lock, so es_append refuses
 * a transaction that has already written (or appended once).
 *
 * Appends to one stream queue on a per-stream transaction lock before taking positions; otherwise
 * a later revision could take a lower position and subscribers would see a stream out of order.
 * That lock assigns no transaction id, so step 1 still holds.
 */
export const EVENT_STORE_SCHEMA = `
CREATE TABLE IF NOT EXISTS es_streams (
  stream_id text PRIMARY KEY,
  revision integer NOT NULL
);
CREATE SEQUENCE IF NOT EXISTS es_position_seq;
CREATE TABLE IF NOT EXISTS es_events (
  position bigint PRIMARY KEY,
  tx_id xid8 NOT NULL,
  stream_id text NOT NULL,
  revision integer NOT NULL,
  type text NOT NULL,
  version integer NOT NULL,
  data jsonb NOT NULL,
  metadata jsonb NOT NULL,
  recorded_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (stream_id, revision)
);
CREATE INDEX IF NOT EXISTS es_events_stream_prefix ON es_events (stream_id text_pattern_ops);
CREATE OR REPLACE FUNCTION es_append(
  p_stream text, p_expected_kind text, p_expected integer,
  p_types text[], p_versions integer[], p_data jsonb[], p_metadata jsonb[]
) RETURNS TABLE (out_revision integer, out_position bigint) LANGUAGE plpgsql AS $$
DECLARE
  n integer := cardinality(p_types);
  v_tx xid8;
  v_first bigint;
  v_rev integer;
  v_actual integer;
BEGIN
  IF pg_current_xact_id_if_assigned() IS NOT NULL THEN
    RAISE EXCEPTION 'es_append must be the first write of its transaction';
  END IF;
  PERFORM pg_advisory_xact_lock(${STREAM_LOCKS}, hashtext(p_stream));
  -- Lock and unlock both sit inside the block: a cancel landing between statements must never
  -- leave the session lock held by a pooled connection, which would stall every append.
  BEGIN
    PERFORM pg_advisory_lock(${POSITION_LOCK});
    v_tx := pg_current_xact_id();
    v_first := nextval('es_position_seq');
    IF n > 1 THEN PERFORM setval('es_position_seq', v_first + n - 1); END IF;
    PERFORM pg_advisory_unlock(${POSITION_LOCK});
  EXCEPTION WHEN OTHERS OR query_canceled THEN
    PERFORM pg_advisory_unlock(${POSITION_LOCK});
    RAISE;
  END;

  IF p_expected_kind = 'no_stream' THEN
    INSERT INTO es_streams VALUES (p_stream, n - 1) ON CONFLICT DO NOTHING RETURNING revision INTO v_rev;
  ELSIF p_expected_kind = 'any' THEN
    INSERT INTO es_streams VALUES (p_stream, n - 1)
      ON CONFLICT (stream_id) DO UPDATE SET revision = es_streams.revision + n RETURNING revision INTO v_rev;
  ELSIF p_expected_kind = 'exists' THEN
    UPDATE es_streams SET revision = revision + n WHERE stream_id = p_stream RETURNING revision INTO v_rev;
  ELSE
    UPDATE es_streams SET revision = revision + n
      WHERE stream_id = p_stream AND revision = p_expected RETURNING revision INTO v_rev;
  END IF;
  IF v_rev IS NULL THEN
    SELECT revision INTO v_actual FROM es_streams WHERE stream_id = p_stream;
    RAISE EXCEPTION USING ERRCODE = '${CONFLICT_STATE}', MESSAGE = coalesce(v_actual, -1)::text;
  END IF;

  INSERT INTO es_events (position, tx_id, stream_id, revision, type, version, data, metadata)
  SELECT v_first + i - 1, v_tx, p_stream, v_rev - n + i, p_types[i], p_versions[i], p_data[i], p_metadata[i]
  FROM generate_subscripts(p_types, 1) AS i;
  RETURN QUERY SELECT v_rev, v_first + n - 1;
END $$;
`;

const VISIBLE = 'tx_id < pg_snapshot_xmin(pg_current_snapshot())';
const COLUMNS = 'stream_id, revision, position, type, version, data, metadata, recorded_at';

export class PostgresEventStore implements EventStore {
  /** Local subscribers are woken at once after a local append; others find it by polling. */
  private readonly wakers = new Set<() => void>();

  constructor(private readonly pool: pg.Pool, private readonly pollMs = 50) {}

  static async migrate(pool: pg.Pool): Promise<void> {
    await pool.query(EVENT_STORE_SCHEMA);
  }

  async append(streamId: string, events: EventToAppend[], expected: ExpectedRevision): Promise<AppendResult> {
    if (events.length === 0) throw new Error('append needs at least one event');
    const kind = typeof expected === 'number' ? 'revision' : expected;
    try {
      const { rows } = await this.pool.query({
        // A named statement: each pooled connection parses and plans the call once, not per append.
        name: 'es_append',
        text: 'SELECT out_revision, out_position FROM es_append($1, $2, $3, $4, $5, $6::jsonb[], $7::jsonb[])',
        values: [
          streamId,
          kind,
          typeof expected === 'number' ? expected : null,
          events.map((e) => e.type),
          events.map((e) => e.version),
          events.map((e) => JSON.stringify(e.data)),
          events.map((e) => JSON.stringify(e.metadata ?? {})),
        ],
      });
      for (const wake of this.wakers) wake();
      return { revision: rows[0].out_revision, position: Number(rows[0].out_position) };
    } catch (error) {
      if ((error as { code?: string }).code === CONFLICT_STATE) {
        throw new WrongExpectedRevision(streamId, expected, Number((error as Error).message));
      }
      throw error;
    }
  }

  async readStream(streamId: string, fromRevision = 0): Promise<RecordedEvent[]> {
    const { rows } = await this.pool.query(
      `SELECT ${COLUMNS} FROM es_events WHERE stream_id = $1 AND revision >= $2 ORDER BY revision`,
      [streamId, fromRevision],
    );
    return rows.map(toRecorded);
  }

  async readAll(options: ReadAllOptions = {}): Promise<RecordedEvent[]> {
    const params: unknown[] = [options.after ?? 0, options.limit ?? 1000];
    let prefix = '';
    if (options.streamPrefix !== undefined) {
      params.push(options.streamPrefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%');
      prefix = 'AND stream_id LIKE $3';
    }
    const { rows } = await this.pool.query(
      `SELECT ${COLUMNS} FROM es_events WHERE position > $1 AND ${VISIBLE} ${prefix} ORDER BY position LIMIT $2`,
      params,
    );
    return rows.map(toRecorded);
  }

  async headPosition(): Promise<number> {
    const { rows } = await this.pool.query(`SELECT position FROM es_events WHERE ${VISIBLE} ORDER BY position DESC LIMIT 1`);
    return Number(rows[0]?.position ?? 0);
  }

  subscribeToAll(options: SubscribeOptions): Subscription {
    let position = options.after ?? 0;
    let closed = false;
    let wake: () => void = () => {};
    // A wake that lands while a read is in flight must not be lost to the following sleep.
    let pending = false;
    const waker = () => { pending = true; wake(); };
    this.wakers.add(waker);
    const batchSize = options.batchSize ?? 500;
    const loop = (async () => {
      while (!closed) {
        pending = false;
        try {
          const events = await this.readAll({ after: position, limit: batchSize });
          if (closed) break;
          if (events.length > 0) {
            await options.onEvents(events);
            position = events[events.length - 1]!.position;
            if (events.length === batchSize) continue;
          }
        } catch (error) {
          if (closed) break;
          options.onError?.(error);
        }
        if (pending) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, this.pollMs);
          wake = () => { clearTimeout(timer); resolve(); };
        });
        wake = () => {};
      }
    })();
    return {
      close: async () => {
        closed = true;
        this.wakers.delete(waker);
        wake();
        await loop;
      },
    };
  }

  async close(): Promise<void> {}
}

function toRecorded(row: Record<string, any>): RecordedEvent {
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
