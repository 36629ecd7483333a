/** tap's `before` (package.json): makes the migrated database every test file clones (./database.ts). */
import pg from 'pg';
import { migrateDatabase } from '../../system.ts';
import { ADMIN_URL, databaseUrl, TEMPLATE_DATABASE } from './database.ts';

const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
try {
  await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
} finally {
  await admin.end();
}
await migrateDatabase(databaseUrl(TEMPLATE_DATABASE));
