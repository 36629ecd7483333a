import type pg from 'pg';
import { openPool, PreparedStatements, SESSION_OPTIONS } from './db.ts';

/**
 * Transactions of writes sent whole: `BEGIN`, the statements and `COMMIT` go out together on a
 * connection in pg's pipeline mode, so a transaction is one round trip where it was one per
 * statement. Under load every round trip also waits its turn of the event loop, and a write that
 * waits for its read model waited for four of them (the projector's begin, checkpoint, insert,
 * commit). Only for statements whose answers nothing needs: the first that fails aborts the
 * transaction (the rest fail with it, `COMMIT` rolls it back), and that error is what `run`
 * throws. Statements with values are prepared, as Kysely's are (`PreparedStatements`).
 */
export class PipelinedWrites {
  private readonly pool: pg.Pool;
  private readonly prepared = new PreparedStatements('p');

  constructor(url: string, max = 4) {
    // pg's pipeline mode: a query is sent at once, without waiting for the answers of those before it.
    this.pool = openPool({ connectionString: url, max, options: SESSION_OPTIONS, pipeline: true });
  }

  async run(statements: readonly { text: string; values: readonly unknown[] }[]): Promise<void> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      const sent = [
        client.query('BEGIN'),
        ...statements.map((s) => this.prepared.query(client, s.text, [...s.values])),
        client.query('COMMIT'),
      ];
      const settled = await Promise.allSettled(sent);
      const failed = settled.find((r) => r.status === 'rejected');
      if (failed) {
        const error = failed.reason as Error & { code?: string };
        // No answer at all: the connection is gone, and the pool must not hand it out again.
        if (error.code === undefined) broken = error;
        throw error;
      }
    } finally {
      client.release(broken);
    }
  }

  close(): Promise<void> {
    return this.pool.ended ? Promise.resolve() : this.pool.end();
  }
}
