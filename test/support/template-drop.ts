/** tap's `after` (package.json): drops the database the test files cloned (./database.ts). */
import pg from 'pg';
import { ADMIN_URL, TEMPLATE_DATABASE } from './database.ts';

const admin = new pg.Client({ connectionString: ADMIN_URL });
await admin.connect();
await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
await admin.end();
