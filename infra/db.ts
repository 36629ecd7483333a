import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';

// int8 (bigint) columns hold global positions and counts, all far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

export type Db = Kysely<any>;

export interface Database {
  pool: pg.Pool;
  db: Db;
  url: string;
  close(): Promise<void>;
}

export function openDatabase(url: string, max = 20): Database {
  const pool = new pg.Pool({ connectionString: url, max });
  // An idle client that loses its connection must not crash the process.
  pool.on('error', () => {});
  const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
  return {
    pool,
    db,
    url,
    // Kysely ends the pool only if it ran a query itself; the raw pool may hold the only clients.
    close: async () => {
      await db.destroy();
      if (!pool.ended) await pool.end();
    },
  };
}
