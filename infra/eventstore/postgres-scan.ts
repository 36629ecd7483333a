import type pg from 'pg';
import type { RecordedEvent, ScanOptions } from './port.ts';

/**
 * A projection rebuild's read of the log (`EventStore.scanAll`), apart from the live subscription
 * and cheaper than its `readAll` pages where a million events make it count:
 * - only the projector's event types leave PostgreSQL;
 * - the visibility bound is computed once per page (an InitPlan), not once per row;
 * - rows come as arrays, and pages are large;
 * - the next page is asked for before the current one is handed over, so PostgreSQL reads page
 *   N + 1 while the caller applies page N (on another connection).
 * A rebuilt read model must hold the very values the live one got from `readAll`: data and
 * metadata go through the same JSON parser, and `recordedAt` comes to the same millisecond.
 */
export async function* scanEvents(pool: pg.Pool, options: ScanOptions): AsyncGenerator<RecordedEvent[]> {
  const limit = options.batchSize ?? 20_000;
  const types = [...options.types];
  const page = async (after: number): Promise<unknown[][]> =>
    (
      await pool.query({
        // recorded_at as whole epoch milliseconds (floored, as pg's date parser truncates the
        // fraction): a million Date parses in JavaScript cost more than the arithmetic here.
        text: `SELECT position, stream_id, revision, type, version, data, metadata,
                      floor(extract(epoch FROM recorded_at) * 1000)::int8 AS recorded_ms FROM es_events
               WHERE position > $1 AND position <= $2 AND type = ANY($3)
                 AND tx_id < (SELECT pg_snapshot_xmin(pg_current_snapshot()))
               ORDER BY position LIMIT $4`,
        values: [after, options.until, types, limit],
        rowMode: 'array',
      })
    ).rows;
  let next = page(options.after);
  try {
    for (;;) {
      const rows = await next;
      if (rows.length === 0) return;
      if (rows.length === limit) next = page(Number(rows[rows.length - 1]![0]));
      const events = new Array<RecordedEvent>(rows.length);
      for (let i = 0; i < rows.length; i++) {
        const r = rows[i]!;
        events[i] = {
          position: Number(r[0]),
          streamId: r[1] as string,
          revision: r[2] as number,
          type: r[3] as string,
          version: r[4] as number,
          data: r[5] as Record<string, unknown>,
          metadata: r[6] as Record<string, unknown>,
          recordedAt: new Date(Number(r[7])),
        };
      }
      yield events;
      if (rows.length < limit) return;
    }
  } finally {
    // A caller that stops early leaves a page in flight; its failure must not surface unhandled.
    next.catch(() => {});
  }
}
