import type pg from 'pg';
import { CONTACT_EVENT_STREAM_LIKE } from '../../domain/contact-events/events.ts';
import { RETENTION_MS } from '../../domain/contact-events/rules.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { Repeating } from '../repeating.ts';

export interface RetentionOptions {
  /** How often the purge runs (and once shortly after start). */
  everyMs: number;
  /** Also delete the stored domain events of old contact-event streams (PostgreSQL event store only). */
  purgeStore: boolean;
}

export interface PurgeResult {
  rows: number;
  names: number;
  outcomes: number;
  streams: number;
  storedEvents: number;
}

const BATCH = 10_000;

/**
 * The contact-event streams' events, as the partial index below holds them (the pattern is
 * written out, not a parameter, so the planner sees the query within the index's predicate).
 */
const OLD_CONTACT_EVENTS = `e.stream_id LIKE '${CONTACT_EVENT_STREAM_LIKE}'`;

/**
 * The purge's way to old contact-event streams: their events by recording time, and only theirs
 * (the pattern is not a prefix of the stream id, so the event store's own index cannot find them).
 */
export const CONTACT_EVENT_RETENTION_SCHEMA = `
CREATE INDEX IF NOT EXISTS es_events_contact_events_recorded ON es_events (recorded_at)
  WHERE stream_id LIKE '${CONTACT_EVENT_STREAM_LIKE}';`;

/**
 * Contact events are kept 90 days (spec), counted from `occurredAt`, the same clock the "not older
 * than 90 days" rule uses, so an event is accepted only while it may still be kept.
 *
 * The one exception to the append-only event store: a contact-event stream (one request, or one
 * Idempotency-Key) whose newest event was recorded more than 90 days ago is deleted whole, so its
 * key may be used afresh. Every event of such a stream occurred more than 90 days ago
 * (occurredAt ≤ recordedAt), so nothing still visible goes. Read-model rows go by their
 * own occurredAt, and the projector skips expired events, so a rebuild equals the live model.
 * Positions of deleted events are far behind every checkpoint; subscribers never look back.
 */
export class ContactEventRetention {
  private readonly loop: Repeating;

  constructor(
    private readonly pool: pg.Pool,
    private readonly options: RetentionOptions,
  ) {
    const purgeNow = async () => {
      await this.purge(new Date());
      return options.everyMs;
    };
    this.loop = new Repeating('contact event retention', purgeNow, options.everyMs);
  }

  start(): void {
    this.loop.start(Math.min(5_000, this.options.everyMs));
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  async purge(now: Date): Promise<PurgeResult> {
    const cutoff = new Date(now.getTime() - RETENTION_MS);
    const result: PurgeResult = { rows: 0, names: 0, outcomes: 0, streams: 0, storedEvents: 0 };
    for (;;) {
      const { rowCount } = await this.pool.query(
        'DELETE FROM contact_events WHERE id IN (SELECT id FROM contact_events WHERE occurred_at < $1 LIMIT $2)',
        [cutoff, BATCH],
      );
      result.rows += rowCount ?? 0;
      if ((rowCount ?? 0) < BATCH) break;
    }
    result.names =
      (await this.pool.query('DELETE FROM contact_event_names WHERE occurred_before <= $1', [cutoff])).rowCount ?? 0;
    result.outcomes =
      (await this.pool.query('DELETE FROM automation_event_outcomes WHERE created_at < $1', [cutoff])).rowCount ?? 0;
    if (!this.options.purgeStore) return result;
    for (;;) {
      // Streams whose newest event is old; short transactions, so subscribers are never held back long.
      const { rows } = await this.pool.query<{ stream_id: string }>(
        `SELECT e.stream_id FROM es_events e
         WHERE ${OLD_CONTACT_EVENTS} AND e.recorded_at < $1
           AND NOT EXISTS (SELECT FROM es_events n WHERE n.stream_id = e.stream_id AND n.revision > e.revision)
         LIMIT 500`,
        [cutoff],
      );
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.stream_id);
      result.storedEvents += await PostgresEventStore.deleteStreams(this.pool, ids);
      result.streams += ids.length;
      if (rows.length < 500) break;
    }
    return result;
  }
}
