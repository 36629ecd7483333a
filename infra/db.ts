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

/** Errors of the network or the operating system that mean the server could not be reached. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** SQLSTATEs of a server going away or not taking connections: shutdown, crash, start-up, full. */
const SERVER_GONE = new Set(['57P01', '57P02', '57P03', '53300']);
/** node-postgres' own words for a connection that ended or never came. */
const CLIENT_GONE = [
  'Connection terminated',
  'Client has encountered a connection error and is not queryable',
  'Client was closed and is not queryable',
  'timeout exceeded when trying to connect',
];

/**
 * Did the database not answer (down, restarting, the connection cut), rather than refuse the
 * statement? Such a failure is worth retrying unchanged; it says nothing of whether a statement
 * in flight took effect.
 */
export function isUnreachable(error: unknown, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 3) return false;
  const e = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && (NETWORK_CODES.has(e.code) || SERVER_GONE.has(e.code) || e.code.startsWith('08'))) return true;
  if (typeof e.message === 'string' && CLIENT_GONE.some((m) => (e.message as string).startsWith(m))) return true;
  if (Array.isArray(e.errors) && e.errors.some((inner) => isUnreachable(inner, depth + 1))) return true;
  return isUnreachable(e.cause, depth + 1);
}
