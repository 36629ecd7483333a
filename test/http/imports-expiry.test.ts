import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { addDomain, publish, startDomainsApp } from '../support/domains.ts';
import { mbox, many, putChunk, waitImport } from '../support/imports.ts';

/**
 * The upload expiry through the running process: an import left `uploading` (never started) is
 * cancelled once no part came for `uploadExpiryMs` (3 s here, a week by default), its parts
 * deleted; one whose parts keep coming is left until they stop.
 */
const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-test-'));
t.teardown(() => rm(dataDir, { recursive: true, force: true }));
const EXPIRY_MS = 3_000;
const { h, dns } = await startDomainsApp(t, {
  dataDir,
  mailboxImports: { chunkBytes: 1024, pollMs: 50, uploadExpiryMs: EXPIRY_MS, uploadExpiryEveryMs: 200 },
});
const ws = await h.workspace();
const key = ws.apiKey;
const d = await addDomain(h, key, 'expiry.example.com');
publish(dns, d.records);
await h.request(key, 'POST', `/domains/${d.id}/verify`);
const address = async (local: string) => {
  const res = await h.request(key, 'POST', '/addresses', { address: `${local}@expiry.example.com` });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const content = mbox(many('exp', 6, { body: 'y'.repeat(300) }));
const plan = async (addressId: string) => {
  const res = await h.request(key, 'POST', '/imports', {
    addressId,
    files: [{ name: 'old.mbox', bytes: content.length }],
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const folder = (id: string) => path.join(dataDir, 'imports', id);
const get = async (id: string) => (await h.request(key, 'GET', `/imports/${id}`)).json();

t.test('uploads left alone expire, with their parts; one still uploading parts stays', async (t) => {
  const [a, b, c] = [await address('a'), await address('b'), await address('c')];
  const stale = await plan(a.id);
  t.ok(stale.files[0].chunks > 1);
  t.equal((await putChunk(h, key, stale.id, 0, 0, content.subarray(0, 1024))).statusCode, 200);
  t.ok(existsSync(folder(stale.id)), 'its part is on disk');
  const empty = await plan(b.id);
  const busy = await plan(c.id);
  // A part of `busy` again every half second: its last part is never as old as the expiry.
  let touching = true;
  const touch = (async () => {
    while (touching) {
      const res = await putChunk(h, key, busy.id, 0, 0, content.subarray(0, 1024));
      if (res.statusCode !== 200) throw new Error(res.body);
      await new Promise((r) => setTimeout(r, 500));
    }
  })();

  const reason = /^Expired: no part was uploaded for 3 s/;
  const done = await waitImport(h, key, stale.id, undefined, 30_000);
  t.match(done, { status: 'cancelled', uploadDeleted: true, lastError: reason, startedAt: null });
  t.notOk(existsSync(folder(stale.id)), 'its parts are deleted');
  t.match(await waitImport(h, key, empty.id, undefined, 30_000), {
    status: 'cancelled',
    uploadDeleted: true,
    lastError: reason,
  });
  t.match(await get(busy.id), { status: 'uploading', uploadDeleted: false }, 'parts still coming: kept');
  t.ok(existsSync(folder(busy.id)));

  touching = false;
  await touch;
  const since = Date.now();
  t.match(await waitImport(h, key, busy.id, undefined, 30_000), { status: 'cancelled', uploadDeleted: true });
  t.ok(Date.now() - since >= EXPIRY_MS - 600, 'once its parts stopped for the expiry');
  t.notOk(existsSync(folder(busy.id)));

  const events = await h.system.database.pool.query(
    `SELECT data, metadata FROM es_events WHERE type = 'MailboxImportCancelled' AND data->>'importId' = $1`,
    [stale.id],
  );
  t.equal(events.rows.length, 1, 'one cancel');
  t.match(events.rows[0].data, { reason });
  t.match(await h.request(key, 'PUT', `/imports/${stale.id}/files/0/chunks/1`), { statusCode: 409 });
});

t.test('an import started runs to its end; a caller cancel gives no reason', async (t) => {
  const [d2, e] = [await address('d'), await address('e')];
  const started = await plan(d2.id);
  for (let c = 0; c < started.files[0].chunks; c++)
    await putChunk(h, key, started.id, 0, c, content.subarray(c * 1024, (c + 1) * 1024));
  t.equal((await h.request(key, 'POST', `/imports/${started.id}/start`)).statusCode, 200);
  t.match(await waitImport(h, key, started.id), {
    status: 'completed',
    counts: { imported: 6 },
    lastError: null,
  });
  const cancelled = await plan(e.id);
  t.equal((await h.request(key, 'POST', `/imports/${cancelled.id}/cancel`)).statusCode, 200);
  t.match(await waitImport(h, key, cancelled.id), { status: 'cancelled', uploadDeleted: true, lastError: null });
});
