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
import { tgz, zip } from '../support/archives.ts';
import { many, mbox, message, runImport, waitImport } from '../support/imports.ts';
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
  // archiveStepMs and archiveResumeFactor 0: an archive's step ends after each batch, as an mbox's
  // does, so a stop lands between them.
  mailboxImports: { chunkBytes: 2048, batchMessages: 4, pollMs: 50, archiveStepMs: 0, archiveResumeFactor: 0 },
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
  // A takeout draft among them: made once too.
  const content = mbox([
    { id: 'crash-draft@outside.test', subject: 'Crash draft', labels: 'Draft' },
    ...many('crash', 40, { to: 'a@restart.example.com', body: 'z'.repeat(150), labels: 'Inbox' }),
  ]);
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
  // Eight imported by the last checkpoint, the draft among them (no thread): seven in threads at least.
  t.ok(before[0].n >= 7, `${before[0].n} messages filed before the stop`);
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
    counts: { imported: 41, duplicate: 0, skipped: 0, notImported: 0 },
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
  const drafts = await h.request(ws.apiKey, 'GET', '/drafts?address=a%40restart.example.com');
  t.same(
    drafts.json().data.map((d: any) => d.subject),
    ['Crash draft'],
    'the draft once',
  );
});

t.test('a tgz stopped twice mid-archive, then its checkpoint lost: each message once', async (t) => {
  const to = { to: 'a@restart.example.com', body: 'w'.repeat(150) };
  const eml = (id: string) => Buffer.from(message({ id, subject: id, ...to }));
  const content = await tgz([
    { name: 'mail', type: 'directory' },
    { name: 'mail/first.mbox', data: mbox(many('arch-a', 20, to)) },
    { name: 'mail/one.eml', data: eml('arch-one@outside.test') },
    {
      name: 'mail/inner.zip',
      data: zip([
        { name: 'x/second.mbox', data: mbox(many('arch-b', 20, to)) },
        { name: 'x/two.eml', data: eml('arch-two@outside.test') },
      ]),
    },
  ]);
  const started = await runImport(h as any, ws.apiKey, address.id, [{ name: 'mail.tgz', content }]);
  const checkpoint = async () =>
    (
      await h.system.database.pool.query(
        'SELECT entry, at_byte::int AS at, ordinal FROM mailbox_import_runs WHERE id = $1',
        [started.id],
      )
    ).rows[0];

  const first = await waitImport(h as any, ws.apiKey, started.id, (i) => i.counts.imported >= 8);
  t.ok(first.counts.imported < 42, `stopped part way (${first.counts.imported} filed)`);
  await h.close();
  h = await open();
  const mid = await checkpoint();
  t.ok(mid.entry.length > 0 && mid.ordinal > 0, `the checkpoint is inside the archive: ${JSON.stringify(mid)}`);

  const second = await waitImport(h as any, ws.apiKey, started.id, (i) => i.counts.imported >= 26);
  t.ok(second.counts.imported < 42, `stopped again (${second.counts.imported} filed)`);
  await h.close();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const { rows } = await admin.query('SELECT entry FROM mailbox_import_runs WHERE id = $1', [started.id]);
  t.same(rows[0].entry.slice(0, 1), [3], 'the second stop was inside the inner zip');
  await admin.query(
    `UPDATE mailbox_import_runs SET entry = '{}', at_byte = 0, ordinal = 0,
       progress = jsonb_set(jsonb_set(progress, '{counts,imported}', '0'), '{processedBytes}', '0')
     WHERE id = $1`,
    [started.id],
  );
  await admin.end();

  h = await open();
  const done = await waitImport(h as any, ws.apiKey, started.id);
  t.match(done, {
    status: 'completed',
    counts: { imported: 42, duplicate: 0, skipped: 0, notImported: 0 },
    processedBytes: content.length,
    uploadDeleted: true,
  });
  const { rows: filed } = await h.system.database.pool.query(
    `SELECT count(*)::int AS n, count(DISTINCT header_id)::int AS ids FROM thread_messages
     WHERE address = 'a@restart.example.com' AND subject LIKE 'arch-%'`,
  );
  t.same(filed[0], { n: 42, ids: 42 }, 'each message once');
});
