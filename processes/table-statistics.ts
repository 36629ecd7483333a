import type pg from 'pg';
import { Repeating } from './repeating.ts';

export const DEFAULT_TABLE_STATISTICS_EVERY_MS = 15_000;

/** Taken while a process looks after the statistics, so that processes of one database take turns. */
const LOCK = 0x57_4d_53_01;
const UNDEFINED_TABLE = '42P01';

/**
 * The tables autovacuum would analyze or vacuum now, by its default thresholds: 50 rows and a
 * tenth of the table changed since its last analyze, 50 rows and a fifth of it dead.
 */
const DUE = `SELECT format('%I.%I', s.schemaname, s.relname) AS name,
    s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0) AS vacuum
  FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
  WHERE s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
    OR s.n_dead_tup > 50 + 0.2 * greatest(c.reltuples, 0)`;

/**
 * Analyzes (and vacuums) the tables that autovacuum would, when the database runs without it, as
 * CI's PostgreSQL does (`autovacuum = off`). A table that grows from empty is never analyzed then,
 * and its planner keeps the estimates of an empty table: at 10,000 filed messages the threading
 * lookup scanned a mailbox's every message (40–70 ms, where the index answers in well under one),
 * and a mailbox import slowed from 20 to 7 messages a second as the mailbox grew
 * (docs/benchmarks.md). With autovacuum on, this does nothing.
 */
export class TableStatistics {
  private readonly loop: Repeating;

  constructor(
    private readonly pool: pg.Pool,
    private readonly everyMs: number = DEFAULT_TABLE_STATISTICS_EVERY_MS,
  ) {
    this.loop = new Repeating('table statistics', () => this.tick(), everyMs);
  }

  async start(): Promise<void> {
    const { rows } = await this.pool.query<{ autovacuum: string }>('SHOW autovacuum');
    if (rows[0]?.autovacuum === 'off') this.loop.start(this.everyMs);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One round: the tables due, each analyzed, or vacuumed and analyzed, in turn; answers the wait for the next. */
  async tick(): Promise<number> {
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('SELECT pg_try_advisory_lock($1) AS locked', [LOCK]);
      if (!rows[0]?.locked) return this.everyMs;
      try {
        const due = await client.query<{ name: string; vacuum: boolean }>(DUE);
        for (const table of due.rows) {
          try {
            await client.query(`${table.vacuum ? 'VACUUM (ANALYZE)' : 'ANALYZE'} ${table.name}`);
          } catch (error) {
            // Dropped since the list was read (a rebuilt read model's old table): nothing to do.
            if ((error as { code?: string }).code !== UNDEFINED_TABLE) throw error;
          }
        }
      } finally {
        await client.query('SELECT pg_advisory_unlock($1)', [LOCK]);
      }
    } finally {
      client.release();
    }
    return this.everyMs;
  }
}
