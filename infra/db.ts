import pg from 'pg';
import { Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient } from 'kysely';
import { parseTimestamptz } from './pg-timestamps.ts';

// int8 (bigint) columns hold global positions and counts, all far below 2^53.
pg.types.setTypeParser(20, (value) => Number(value));
pg.types.setTypeParser(1184, parseTimestamptz);

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

/** How many distinct statements one `PreparedStatements` names; any further ones are parsed on every run. */
const PREPARED_STATEMENTS = 2000;

/**
 * Statements run as named (prepared) ones: each connection parses and plans a statement the first
 * time it runs it and only binds and executes it after that, which on the request path saves
 * PostgreSQL a parse and a plan per query. Only statements with parameters: without, pg uses the
 * simple protocol, which is what lets a raw string carry several statements (DDL, `SET LOCAL`s).
 * A name per distinct text, so one name never means two texts; the number of names is bounded
 * because a connection keeps every statement it prepared. A plan follows a table swapped in under
 * it (PostgreSQL re-plans on DDL and on a changed search_path); what it cannot follow is a
 * `SELECT *` whose table now has other columns (a rebuild by a newer version of the code): that
 * statement fails once, and its text gets a new name, parsed afresh.
 */
export class PreparedStatements {
  private readonly names = new Map<string, string>();
  private made = 0;

  /** `prefix` keeps the names of two of these apart should they ever share a connection. */
  constructor(private readonly prefix: string) {}

  query(client: pg.PoolClient, text: string, values: unknown[] | undefined): Promise<pg.QueryResult> {
    const name = values?.length ? this.nameOf(text) : undefined;
    if (name === undefined) return client.query(text, values);
    return client.query({ name, text, values }).catch((error) => {
      // 0A000: "cached plan must not change result type".
      if ((error as { code?: string }).code === '0A000' && this.names.get(text) === name)
        this.names.set(text, `${this.prefix}${this.made++}`);
      throw error;
    });
  }

  private nameOf(text: string): string | undefined {
    const name = this.names.get(text);
    if (name !== undefined || this.names.size >= PREPARED_STATEMENTS) return name;
    const next = `${this.prefix}${this.made++}`;
    this.names.set(text, next);
    return next;
  }
}

/** Kysely's queries as prepared statements (`PreparedStatements`). */
function preparing(pool: pg.Pool): PostgresPool {
  const prepared = new PreparedStatements('k');
  const wrapped = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => ({
    query: ((text: string | pg.Submittable, values?: unknown[]) => {
      if (typeof text !== 'string') return client.query(text);
      return prepared.query(client, text, values);
    }) as unknown as PostgresPoolClient['query'],
    release: () => client.release(),
  });
  return {
    connect: async () => {
      const client = await pool.connect();
      const known = wrapped.get(client);
      if (known) return known;
      const w = wrap(client);
      wrapped.set(client, w);
      return w;
    },
    end: () => pool.end(),
  };
}

/**
 * Settings of every session of the service's own pools. Random reads priced as on a solid-state
 * disk, not PostgreSQL's spinning-disk default (4): with 4, a body-text search planned a parallel
 * sequential scan of message_texts over its GIN index (122 ms against 12 ms over 200,000
 * messages, docs/benchmarks.md).
 */
export const SESSION_OPTIONS = '-c random_page_cost=1.1';

export function openDatabase(url: string, max = 20): Database {
  const pool = openPool({ connectionString: url, max, options: SESSION_OPTIONS });
  const db = new Kysely<unknown>({ dialect: new PostgresDialect({ pool: preparing(pool) }) });
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
