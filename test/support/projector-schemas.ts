import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import type { Projector } from '../../projections/projector.ts';

/**
 * A projector's tables in schemas of their own, to compare two ways of applying the same events:
 * `fresh` makes the schema's tables anew, `inSchema` runs a transaction on them (as the runner's
 * would, unqualified names resolving there), `tables` reads every row of each, sorted, as JSON.
 */
export function projectorSchemas(database: { db: Kysely<unknown>; pool: pg.Pool }, p: Projector) {
  const { db, pool } = database;
  return {
    fresh: (schema: string) =>
      pool.query(
        `DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}; ${p.ddl(schema)}${p.indexes?.(schema) ?? ''}`,
      ),
    inSchema: (schema: string, fn: (trx: Kysely<unknown>) => Promise<void>) =>
      db
        .withSchema(schema)
        .transaction()
        .execute(async (trx) => {
          await sql.raw(`SET LOCAL search_path TO ${schema}, public`).execute(trx);
          await fn(trx);
        }),
    tables: async (schema: string) => {
      const out: Record<string, string[]> = {};
      for (const table of p.tables)
        out[table] = (await pool.query(`SELECT to_jsonb(x)::text AS j FROM ${schema}.${table} x ORDER BY 1`)).rows.map(
          (r) => r.j,
        );
      return out;
    },
  };
}
