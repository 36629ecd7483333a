import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
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
  dropAtTeardown(t, name);
  return urlOf(name);
}

/** The folders whose code makes the schema a system opens with: a change anywhere makes a new template. */
const SCHEMA_SOURCES = ['system.ts', 'api', 'commands', 'domain', 'infra', 'processes', 'projections'];

function sourceHash(): string {
  const hash = crypto.createHash('sha256');
  const walk = (entry: string) => {
    const stat = fs.statSync(entry);
    if (stat.isDirectory()) for (const name of fs.readdirSync(entry).sort()) walk(path.join(entry, name));
    else if (entry.endsWith('.ts')) hash.update(entry).update(fs.readFileSync(entry));
  };
  for (const source of SCHEMA_SOURCES) walk(source);
  return hash.digest('hex').slice(0, 16);
}

let template: Promise<string> | undefined;

/**
 * A database as `openSystem` leaves it on first open (tables, indexes, checkpoints at 0), copied
 * from a template made once per version of the code: opening a system on an empty database runs
 * every migration, about 2 s, which most test files paid several times. The template keeps no
 * secrets (each database makes its own keys on open, as a new deployment does). Tests of
 * migrations themselves use `freshDatabase`.
 */
export async function migratedDatabase(
  t: { teardown(fn: () => Promise<void> | void): void },
  migrate: (url: string) => Promise<void>,
): Promise<string> {
  template ??= makeTemplate(migrate);
  const source = await template;
  const name = `wms_test_${crypto.randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name} TEMPLATE ${source}`);
  } finally {
    await admin.end();
  }
  dropAtTeardown(t, name);
  return urlOf(name);
}

async function makeTemplate(migrate: (url: string) => Promise<void>): Promise<string> {
  const name = `wms_tpl_${sourceHash()}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  try {
    // Test files run in parallel processes: one makes the template, the others wait for it.
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    const { rows } = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rows.length === 0) {
      const building = `${name}_new`;
      await admin.query(`DROP DATABASE IF EXISTS ${building} WITH (FORCE)`);
      await admin.query(`CREATE DATABASE ${building}`);
      await migrate(urlOf(building));
      const db = new pg.Client({ connectionString: urlOf(building) });
      await db.connect();
      await db.query('DELETE FROM server_secrets; DELETE FROM vault_secrets');
      await db.end();
      await admin.query(`ALTER DATABASE ${building} RENAME TO ${name}`);
      // Templates of older code go, unless a run of that code is copying one right now.
      const old = await admin.query(
        "SELECT datname FROM pg_database WHERE datname LIKE 'wms\\_tpl\\_%' AND datname <> $1",
        [name],
      );
      for (const { datname } of old.rows) await admin.query(`DROP DATABASE IF EXISTS ${datname}`).catch(() => {});
    }
    await admin.query('SELECT pg_advisory_unlock(hashtext($1))', [name]);
  } finally {
    await admin.end();
  }
  return name;
}

function urlOf(name: string): string {
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return url.toString();
}

function dropAtTeardown(t: { teardown(fn: () => Promise<void> | void): void }, name: string): void {
  t.teardown(async () => {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
}
