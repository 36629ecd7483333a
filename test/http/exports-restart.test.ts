import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { exportsStream } from '../../domain/exports/events.ts';
import { openSystem, serve, type SystemOptions } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { HOSTS, publish } from '../support/domains.ts';
import { openZip, waitExport } from '../support/exports.ts';
import { many, mbox, runImport, waitImport } from '../support/imports.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

/**
 * A restart in the middle of an export: the system stops while the zip is being written, and a
 * new system on the same database and data folder begins it again from the first byte (a second
 * attempt) and finishes it. The zip holds every message once, and nothing of the first attempt
 * is left in the blob store.
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
  mailboxImports: { chunkBytes: 64 * 1024, pollMs: 50 },
  exports: { pollMs: 50, pageRows: 1, progressEveryMs: 0 },
};

async function open() {
  const system = await openSystem(url, options);
  const app = await serve(system);
  return {
    system,
    request: async (key: string | null, method: string, url: string, body?: unknown) =>
      (await app.inject({
        method: method as 'GET',
        url,
        headers: key ? { authorization: `Bearer ${key}` } : {},
        ...(body === undefined ? {} : { payload: body as object }),
      })) as any,
    close: async () => {
      await app.close();
      await system.close();
    },
  };
}

let h = await open();
t.teardown(() => h.close());
const ws = await createWorkspace(h.system.commands, { name: 'Restart', ownerEmail: 'owner@export-restart.test' });
const added = (await h.request(ws.apiKey, 'POST', '/domains', { domain: 'export-restart.example.com' })).json();
publish(dns, added.records);
await h.request(ws.apiKey, 'POST', `/domains/${added.id}/verify`);
const address = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'a@export-restart.example.com' })).json();

t.test('stopped mid-write: a new system writes the zip again, whole, each message once', async (t) => {
  const N = 60;
  const started = await runImport(h as any, ws.apiKey, address.id, [
    { name: 'many.mbox', content: mbox(many('restart', N, { to: 'a@export-restart.example.com' })) },
  ]);
  await waitImport(h as any, ws.apiKey, started.id);

  const e = (await h.request(ws.apiKey, 'POST', '/exports')).json();
  const mid = await waitExport(h as any, ws.apiKey, e.id, (x) => x.status !== 'queued' && x.threadsDone >= 5);
  t.equal(mid.status, 'running', `stopped part way (${mid.threadsDone} of ${mid.threadsTotal} threads)`);
  await h.close();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const { rows } = await admin.query('SELECT status, attempt FROM export_runs WHERE id = $1', [e.id]);
  await admin.end();
  t.same(rows, [{ status: 'running', attempt: 1 }], 'left running by the stop, to be begun again');

  h = await open();
  const done = await waitExport(h as any, ws.apiKey, e.id);
  t.match(done, { status: 'ready', threadsDone: N, threadsTotal: N, counts: { threads: N, messages: N } });
  const { rows: run } = await h.system.database.pool.query('SELECT status, attempt FROM export_runs WHERE id = $1', [
    e.id,
  ]);
  t.same(run, [{ status: 'done', attempt: 2 }], 'a second attempt wrote it');
  const events = await h.system.store.readStream(exportsStream(ws.workspaceId));
  t.same(
    events.filter((x) => x.type === 'ExportStarted').map((x) => (x.data as { attempt: number }).attempt),
    [1, 2],
  );
  t.same(
    events.filter((x) => x.type === 'ExportCompleted').map((x) => (x.data as { attempt: number }).attempt),
    [2],
  );

  const zip = await openZip(t, (await h.request(ws.apiKey, 'GET', `/exports/${e.id}/content`)).rawPayload);
  t.match(zip.tested, /No errors detected/);
  const inbox = (await zip.read('mail/a@export-restart.example.com/inbox.mbox')).toString();
  const ids = [...inbox.matchAll(/^Message-ID: <([^>]+)>/gm)].map((m) => m[1]);
  t.equal(ids.length, N, 'every message');
  t.equal(new Set(ids).size, N, 'each once');
  t.same(
    await readdir(path.join(dataDir, 'blobs', 'tmp')).catch(() => []),
    [],
    'no part of the first attempt left behind',
  );
});
