import crypto from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL the tests run on; CI and developers have one on 127.0.0.1:5432 (trust auth). */
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * The migrated database each test file's database is cloned from, one per checkout (two checkouts
 * may run their suites on one server at once). tap makes it before the files run and drops it
 * after (test/support/template.ts); cloning it is a file copy, where migrating anew cost every
 * test app half a second of DDL.
 */
export const TEMPLATE_DATABASE = `wms_template_${crypto.createHash('sha256').update(process.cwd()).digest('hex').slice(0, 12)}`;

export function databaseUrl(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A fresh database for one test file, dropped when the file is done: a clone of the migrated template. */
export async function freshDatabase(t: { teardown(fn: () => Promise<void> | void): void }): Promise<string> {
  const name = `wms_test_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${TEMPLATE_DATABASE}`);
  } catch (error) {
    // No template (a file run without tap), or another tap run in this checkout remaking it right
    // now (its `before`): an empty database, which the system migrates as it opens.
    const code = (error as { code?: string }).code;
    if (code !== '3D000' && code !== '55006') throw error;
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  return databaseUrl(name);
}
