import type pg from 'pg';
import { expireTempInbox } from '../../commands/temp-inboxes/handlers.ts';
import type { CommandContext } from '../../commands/execute.ts';
import { TEMP_INBOX_NETWORK_STREAM_PREFIX, TEMP_INBOX_STREAM_PREFIX } from '../../domain/temp-inboxes/events.ts';
import { TEMP_INBOX_WINDOW_MS } from '../../domain/temp-inboxes/rules.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { Repeating } from '../repeating.ts';

export interface TempInboxRetentionOptions {
  /** How often expired inboxes are looked for (and once shortly after start). */
  everyMs: number;
  /** Also delete the stored events of expired inboxes and idle networks (PostgreSQL event store only). */
  purgeStore: boolean;
}

export interface TempInboxPurge {
  expired: number;
  streams: number;
  storedEvents: number;
}

export const DEFAULT_TEMP_INBOX_RETENTION_EVERY_MS = 60_000;
const BATCH = 500;
/** The read model's name (projections/temp-inboxes/projector.ts), whose checkpoint is read here. */
const READ_MODEL = 'temp_inboxes';

/**
 * Disposable inboxes end at their expiry: `TempInboxExpired` takes the inbox and its messages out
 * of the read model (reads already refuse them from `expiresAt` on, so a late tick shows nothing).
 * Then, as the contact events' retention does, the expired inboxes' streams are deleted whole
 * from the store, and so are the allowance streams of networks idle for longer than the window:
 * nothing about a disposable inbox, or about the network that asked for it, outlives its use.
 * Raw messages stay in the blob store, which deletes nothing (docs/decisions/receiving.md).
 */
export class TempInboxRetention {
  private readonly loop: Repeating;

  constructor(
    private readonly pool: pg.Pool,
    private readonly commands: CommandContext,
    private readonly options: TempInboxRetentionOptions,
  ) {
    this.loop = new Repeating(
      'temp inbox retention',
      async () => {
        await this.purge(new Date());
        return options.everyMs;
      },
      options.everyMs,
    );
  }

  start(): void {
    this.loop.start(Math.min(5_000, this.options.everyMs));
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  async purge(now: Date): Promise<TempInboxPurge> {
    const result: TempInboxPurge = { expired: 0, streams: 0, storedEvents: 0 };
    for (;;) {
      const { rows } = await this.pool.query<{ id: string }>(
        'SELECT id FROM temp_inboxes WHERE expires_at <= $1 ORDER BY expires_at LIMIT $2',
        [now, BATCH],
      );
      for (const { id } of rows) await expireTempInbox(this.commands, id, now.toISOString());
      result.expired += rows.length;
      if (rows.length < BATCH) break;
    }
    if (!this.options.purgeStore) return result;
    // An inbox's stream goes only once the read model has applied its expiry (its checkpoint is
    // past it), whichever process appended it: deleted sooner, the rows would never be taken away.
    for (;;) {
      const { rows } = await this.pool.query<{ stream_id: string }>(
        `SELECT e.stream_id FROM es_events e
         WHERE ((e.stream_id LIKE $1 AND e.stream_id NOT LIKE $2 AND e.type = 'TempInboxExpired'
                 AND e.position <= (SELECT position FROM projection_checkpoints WHERE name = $5))
             OR (e.stream_id LIKE $2 AND e.recorded_at < $3))
           AND NOT EXISTS (SELECT FROM es_events n WHERE n.stream_id = e.stream_id AND n.revision > e.revision)
         LIMIT $4`,
        [
          `${TEMP_INBOX_STREAM_PREFIX}%`,
          `${TEMP_INBOX_NETWORK_STREAM_PREFIX}%`,
          new Date(now.getTime() - TEMP_INBOX_WINDOW_MS),
          BATCH,
          READ_MODEL,
        ],
      );
      if (rows.length === 0) break;
      const ids = rows.map((r) => r.stream_id);
      result.storedEvents += await PostgresEventStore.deleteStreams(this.pool, ids);
      result.streams += ids.length;
      if (rows.length < BATCH) break;
    }
    return result;
  }
}
