import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve, type SystemOptions } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { HOSTS, publish } from '../support/domains.ts';
import { many, mbox, runImport, waitImport } from '../support/imports.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

/**
 * A restart in the middle of an import: the system is stopped while the import runs, its last
 * checkpoint is then taken back to the start (as if it had crashed after filing messages and
 * before recording them), and a new system on the same database and data folder finishes it.
 * Every message is in its mailbox once, and the counts are those of one clean run.
 */
const url = await freshDatabase(t);
const dns = await startDnsServer(t);
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-test-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const options: SystemOptions = {
  secretsKey: TEST_SECRETS_KEY,
  dataDir,
  dns: { servers: [dns.address], timeoutMs: 1000 },
  mailHosts: HOSTS,
  domainChecks: { pollMs: 3_600_000 },
  mailboxImports: { chunkBytes: 2048, batchMessages: 4, pollMs: 50 },
};

async function open() {
  const system = await openSystem(url, options);
  const app = await serve(system);
  const h = {
    system,
    request: async (key: string, method: string, url: string, body?: unknown, headers: Record<string, string> = {}) =>
      (await app.inject({
        method: method as 'GET',
        url,
        headers: { authorization: `Bearer ${key}`, ...headers },
        ...(body === undefined ? {} : { payload: body as object }),
      })) as any,
    close: async () => {
      await app.close();
      await system.close();
    },
  };
  return h;
}

let h = await open();
t.teardown(() => h.close());
const ws = await createWorkspace(h.system.commands, { name: 'Restart', ownerEmail: 'owner@restart.test' });
const added = (await h.request(ws.apiKey, 'POST', '/domains', { domain: 'restart.example.com' })).json();
publish(dns, added.records);
await h.request(ws.apiKey, 'POST', `/domains/${added.id}/verify`);
const address = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'a@restart.example.com' })).json();

t.test('stopped mid-run, its checkpoint lost: a new system finishes with nothing twice', async (t) => {
  const content = mbox(many('crash', 40, { to: 'a@restart.example.com', body: 'z'.repeat(150) }));
  const started = await runImport(h as any, ws.apiKey, address.id, [{ name: 'crash.mbox', content }]);
  const mid = await waitImport(
    h as any,
    ws.apiKey,
    started.id,
    (i) => i.status === 'running' && i.counts.imported >= 8,
  );
  t.ok(mid.counts.imported < 40, `stopped part way (${mid.counts.imported} filed)`);
  await h.close();

  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const { rows: before } = await admin.query(
    "SELECT count(*)::int AS n FROM thread_messages WHERE address = 'a@restart.example.com'",
  );
  t.ok(before[0].n >= 8, `${before[0].n} messages filed before the stop`);
  await admin.query(
    `UPDATE mailbox_import_runs SET file = 0, at_byte = 0, ordinal = 0,
       progress = jsonb_set(jsonb_set(progress, '{counts,imported}', '0'), '{processedBytes}', '0')
     WHERE id = $1`,
    [started.id],
  );
  await admin.end();

  h = await open();
  const done = await waitImport(h as any, ws.apiKey, started.id);
  t.match(done, {
    status: 'completed',
    counts: { imported: 40, duplicate: 0, skipped: 0, notImported: 0 },
    processedBytes: content.length,
    uploadDeleted: true,
  });
  const { rows } = await h.system.database.pool.query(
    `SELECT count(*)::int AS n, count(DISTINCT header_id)::int AS ids FROM thread_messages
     WHERE address = 'a@restart.example.com'`,
  );
  t.same(rows[0], { n: 40, ids: 40 }, 'each message once');
  const threads = await h.request(ws.apiKey, 'GET', '/threads?address=a%40restart.example.com&limit=100');
  t.equal(threads.json().data.length, 40);
});
