import pg from 'pg';
import { Kysely, PostgresDialect } from 'kysely';

// int8 (bigint) columns hold global positions and counts, all far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));

export interface Database {
  pool: pg.Pool;
  /**
   * The tables are not this adapter's to know: the composition root names them for what it hands
   * on (`db.withTables<ReadModels>()`), and the projection runner hands each projector its own.
   */
  db: Kysely<unknown>;
  url: string;
  close(): Promise<void>;
}

/**
 * A pool whose connections may die (a restart of PostgreSQL, a terminated backend) without taking
 * the process with them. Every pool of the service is made here.
 */
export function openPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  // An idle client that loses its connection: the pool drops it and reports it here.
  pool.on('error', () => {});
  // A checked-out client is no longer heard by the pool: without a listener of its own, its lost
  // connection would be an unhandled 'error' event. Its holder learns of it from its next query
  // (which fails), and the pool drops it when it comes back.
  pool.on('connect', (client) => client.on('error', () => {}));
  return pool;
}

export function openDatabase(url: string, max = 20): Database {
  const pool = openPool({ connectionString: url, max });
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) });
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
