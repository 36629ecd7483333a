import crypto from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL the tests run on; CI and developers have one on 127.0.0.1:5432 (trust auth). */
export const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A fresh, empty database for one test file, dropped when the file is done. */
export async function freshDatabase(t: { teardown(fn: () => Promise<void> | void): void }): Promise<string> {
  const name = `wms_test_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}
