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
 * Contact events are kept 90 days (spec), counted from `occurredAt`, the same clock the "not older
 * than 90 days" rule uses, so an event is accepted only while it may still be kept.
 *
 * The one exception to the append-only event store: a contact-event stream (one request, or one
 * Idempotency-Key) whose newest event was recorded more than 90 days ago is deleted whole, events
 * and revision row, so its key may be used afresh. Every event of such a stream occurred more than
 * 90 days ago (occurredAt ≤ recordedAt), so nothing still visible goes. Read-model rows go by their
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
        `SELECT s.stream_id FROM es_streams s JOIN es_events e ON e.stream_id = s.stream_id AND e.revision = s.revision
         WHERE s.stream_id LIKE $1 AND e.recorded_at < $2 LIMIT 500`,
        [CONTACT_EVENT_STREAM_LIKE, cutoff],
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
