import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import t from 'tap';
import { tgz, zip } from '../support/archives.ts';
import { addDomain, errorOf, publish, startDomainsApp } from '../support/domains.ts';
import { many, mbox, message, runImport, uploadAll, waitImport } from '../support/imports.ts';

/**
 * Mailbox imports of .zip and .tgz uploads through the api into PostgreSQL: mail files in folders
 * and one archive deep, a takeout zip's labels, and hand-made hostile archives, refused at start
 * when the zip's directory (or the tgz's first header) shows it, else failing the import with
 * `lastError`. The limits are lowered (50 entries; the ratio counted past 64 KiB) so small
 * archives reach them.
 */
const root = await mkdtemp(path.join(os.tmpdir(), 'wms-archives-'));
t.teardown(() => rm(root, { recursive: true, force: true }));
const dataDir = path.join(root, 'data');
await mkdir(dataDir);
const { h, dns } = await startDomainsApp(t, {
  dataDir,
  mailboxImports: {
    chunkBytes: 4096,
    batchMessages: 3,
    pollMs: 50,
    archive: { entriesMax: 50, ratioFloorBytes: 64 * 1024 },
  },
});

const ws = await h.workspace();
const domain = 'archives.example.com';
const added = await addDomain(h, ws.apiKey, domain);
publish(dns, added.records);
await h.request(ws.apiKey, 'POST', `/domains/${added.id}/verify`);
const key = ws.apiKey;
const address = async (local: string) => {
  const res = await h.request(key, 'POST', '/addresses', { address: `${local}@${domain}` });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const threadsOf = async (local: string) => {
  const res = await h.request(key, 'GET', `/threads?address=${encodeURIComponent(`${local}@${domain}`)}&limit=100`);
  if (res.statusCode !== 200) throw new Error(res.body);
  return res.json().data as any[];
};
const eml = (id: string, subject: string) => Buffer.from(message({ id, subject, to: `x@${domain}` }));

t.test('a takeout zip: mbox with labels in folders, an .eml, other files passed over, a tgz inside', async (t) => {
  const a = await address('zip');
  const takeout = mbox([
    { id: 't1@outside.test', subject: 'Work mail', labels: 'Inbox,Unread,Work' },
    { id: 't2@outside.test', subject: 'Old mail', labels: 'Archived,Opened,Work' },
    { id: 't3@outside.test', subject: 'Spam mail', labels: 'Spam' },
    { id: 't4@outside.test', subject: 'Travel', labels: 'Opened,Travel' },
  ]);
  const inner = await tgz([
    { name: 'more', type: 'directory' },
    { name: 'more/old.mbox', data: mbox(many('inner-tgz', 4)) },
  ]);
  const content = zip([
    { name: 'Takeout/' },
    { name: 'Takeout/archive_browser.html', data: Buffer.from('<html><body>Takeout</body></html>') },
    { name: 'Takeout/Mail/' },
    { name: 'Takeout/Mail/All mail Including Spam and Trash.mbox', data: takeout },
    { name: 'Takeout/Calendar/me.ics', data: Buffer.from('BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n') },
    { name: 'Loose/one.eml', data: eml('z1@outside.test', 'Loose eml') },
    { name: 'more.tar.gz', data: inner, store: true },
  ]);
  const started = await runImport(h, key, a.id, [{ name: 'takeout-2024.zip', content }]);
  t.same(started.formats, ['zip']);
  const done = await waitImport(h, key, started.id);
  t.match(done, {
    status: 'completed',
    counts: { imported: 8, duplicate: 0, skipped: 1, notImported: 0 },
    labelsCreated: 2,
    processedBytes: content.length,
    uploadDeleted: true,
    lastError: null,
  });
  const threads = await threadsOf('zip');
  const bySubject = Object.fromEntries(threads.map((th) => [th.subject, th]));
  const labels = (await h.request(key, 'GET', `/labels?address=zip@${domain}`)).json().data as any[];
  const work = labels.find((l) => l.name === 'Work').id;
  t.match(bySubject['Work mail'], { labels: ['inbox', work], unread: true });
  t.match(bySubject['Old mail'], { labels: ['archive', work], unread: false });
  t.ok(bySubject.Travel.labels.includes(labels.find((l) => l.name === 'Travel').id));
  t.ok(bySubject['Loose eml'], 'the .eml in a folder');
  t.ok(bySubject['inner-tgz 3'], 'the mbox of the tgz inside');
  t.notOk(bySubject['Spam mail'], 'spam left out');
  t.equal(threads.length, 8);
});

t.test('a tgz of mbox and .eml files in folders, a zip inside, uploaded in one call', async (t) => {
  const b = await address('tgz');
  const inner = zip([
    { name: 'x/inner.mbox', data: mbox(many('inner-zip', 3)) },
    { name: 'x/inner.eml', data: eml('iz@outside.test', 'Inner eml') },
  ]);
  const content = await tgz([
    { name: 'mail', type: 'directory' },
    { name: 'mail/2023.mbox', data: mbox(many('y2023', 5)) },
    { name: 'mail/notes.txt', data: Buffer.from('not mail\n') },
    { name: 'mail/one.eml', data: eml('t-one@outside.test', 'Tgz eml') },
    { name: 'mail/inner.zip', data: inner },
    { name: 'mail/2024.mbox', data: mbox(many('y2024', 4)) },
  ]);
  const res = await h.request(key, 'POST', `/imports/upload?addressId=${b.id}&filename=mail.tgz`, content, {
    'content-type': 'application/gzip',
  });
  t.equal(res.statusCode, 201, res.body);
  t.match(res.json(), { status: 'queued', formats: ['tgz'] });
  t.match(await waitImport(h, key, res.json().id), {
    status: 'completed',
    counts: { imported: 14, duplicate: 0, skipped: 0, notImported: 0 },
    processedBytes: content.length,
  });
  const subjects = (await threadsOf('tgz')).map((th) => th.subject);
  t.equal(subjects.length, 14);
  for (const s of ['y2023 4', 'Tgz eml', 'inner-zip 2', 'Inner eml', 'y2024 0']) t.ok(subjects.includes(s), s);

  // The same archive again is all duplicates.
  const again = await runImport(h, key, b.id, [{ name: 'again.tgz', content }]);
  t.match(await waitImport(h, key, again.id), { status: 'completed', counts: { imported: 0, duplicate: 14 } });
});

const ok = eml('ok@outside.test', 'Fine');
/** Plans, uploads and starts `content` into `addressId`: the answer of the start. */
async function start(addressId: string, content: Buffer, name = 'upload.bin') {
  const plan = (
    await h.request(key, 'POST', '/imports', { addressId, files: [{ name, bytes: content.length }] })
  ).json();
  await uploadAll(h, key, plan, [{ content }]);
  return h.request(key, 'POST', `/imports/${plan.id}/start`);
}

t.test('hostile zips: the central directory shows it, so the start refuses them', async (t) => {
  const c = await address('hostile-zip');
  const cases: [string, Buffer, string, RegExp][] = [
    [
      'zip-slip',
      zip([
        { name: 'ok.eml', data: ok },
        { name: '../../evil.eml', data: ok },
      ]),
      'upload_dangerous',
      /relative path/,
    ],
    ['absolute', zip([{ name: '/tmp/evil.eml', data: ok }]), 'upload_dangerous', /absolute path/],
    ['drive letter', zip([{ name: 'C:\\evil.eml', data: ok }]), 'upload_dangerous', /absolute path/],
    ['backslash slip', zip([{ name: 'a\\..\\..\\evil.eml', data: ok }]), 'upload_dangerous', /relative path/],
    [
      'symlink',
      zip([{ name: 'link.eml', data: Buffer.from('/etc/passwd'), mode: 0o120777 }]),
      'upload_dangerous',
      /symbolic link/,
    ],
    [
      'fifo',
      zip([
        { name: 'pipe', mode: 0o010644 },
        { name: 'ok.eml', data: ok },
      ]),
      'upload_dangerous',
      /pipe/,
    ],
    [
      'exe by name',
      zip([
        { name: 'ok.eml', data: ok },
        { name: 'invoice.exe', data: Buffer.from('hi') },
      ]),
      'upload_dangerous',
      /executable/,
    ],
    [
      'ELF by bytes',
      zip([
        { name: 'ok.eml', data: ok },
        { name: 'ok2.eml', data: Buffer.from('\x7fELF\x02\x01\x01') },
      ]),
      'upload_dangerous',
      /executable/,
    ],
    [
      '51 entries',
      zip(Array.from({ length: 51 }, (_, i) => ({ name: `m${i}.eml`, data: eml(`n${i}@outside.test`, `N ${i}`) }))),
      'upload_dangerous',
      /51 entries/,
    ],
    [
      'ratio bomb',
      zip([
        { name: 'ok.eml', data: ok },
        { name: 'bomb.mbox', data: Buffer.alloc(8_000_000, 0x41) },
      ]),
      'upload_dangerous',
      /past 100 times/,
    ],
    [
      'a size that lies, past the ratio',
      zip([{ name: 'small.mbox', data: mbox(many('small', 2)), declaredSize: 2_000_000_000 }]),
      'upload_dangerous',
      /past 100 times/,
    ],
    ['no mail in it', zip([{ name: 'photo.json', data: Buffer.from('{"a":1}') }]), 'unsupported_file', /no mbox/],
    ['not a zip', Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(60)]), 'unsupported_file', /readable zip/],
  ];
  for (const [label, content, code, message] of cases) {
    const res = await start(c.id, content);
    t.same(errorOf(res), [400, code, 'files.0'], label);
    t.match(res.json().error.message, message, label);
  }
  t.equal((await threadsOf('hostile-zip')).length, 0, 'nothing imported');

  // The one-call upload checks the directory once the file is whole, and leaves no import.
  const before = (await h.request(key, 'GET', `/imports?addressId=${c.id}&limit=100`)).json().data.length;
  const slip = await h.request(
    key,
    'POST',
    `/imports/upload?addressId=${c.id}&filename=x.zip`,
    zip([{ name: '../evil.eml', data: ok }]),
    { 'content-type': 'application/zip' },
  );
  t.same(errorOf(slip), [400, 'upload_dangerous', 'filename']);
  t.equal((await h.request(key, 'GET', `/imports?addressId=${c.id}&limit=100`)).json().data.length, before);
});

t.test('hostile tgzs: the first header is checked at start, the rest fails the import as it streams', async (t) => {
  const d = await address('hostile-tgz');
  for (const [label, content] of [
    ['slip first', await tgz([{ name: '../evil.eml', data: ok }])],
    ['absolute first', await tgz([{ name: '/etc/evil.eml', data: ok }])],
    ['symlink first', await tgz([{ name: 'l.eml', type: 'symlink', linkname: '/etc/passwd' }])],
  ] as const) {
    const res = await start(d.id, content);
    t.same(errorOf(res), [400, 'upload_dangerous', 'files.0'], label);
  }
  t.same(
    errorOf(await start(d.id, gzipSync(mbox(many('gz', 2))))),
    [400, 'unsupported_file', 'files.0'],
    'a gzip without a tar',
  );

  const cases: [string, Buffer, RegExp][] = [
    [
      'zip-slip later',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'a/../../evil.eml', data: ok },
      ]),
      /path out of the archive/,
    ],
    [
      'symbolic link',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'l', type: 'symlink', linkname: '../../x' },
      ]),
      /is a link/,
    ],
    [
      'hard link',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'h', type: 'link', linkname: '/etc/passwd' },
      ]),
      /is a link/,
    ],
    [
      'device',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'dev', type: 'character-device' },
      ]),
      /device/,
    ],
    [
      'script',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'run', data: Buffer.from('#!/bin/sh\nrm -rf /\n') },
      ]),
      /executable/,
    ],
    [
      'exe by name',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'x.bat', data: Buffer.from('echo') },
      ]),
      /executable/,
    ],
    [
      '51 entries',
      await tgz(
        Array.from({ length: 51 }, (_, i) => ({ name: `m${i}.eml`, data: eml(`tn${i}@outside.test`, `TN ${i}`) })),
      ),
      /more than 50 entries/,
    ],
    [
      'gzip bomb',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'bomb.mbox', data: Buffer.alloc(20_000_000, 0x41) },
      ]),
      /unpacks past/,
    ],
    [
      'two archives deep',
      await tgz([
        { name: 'ok.eml', data: ok },
        { name: 'outer.zip', data: zip([{ name: 'inner.tgz', data: await tgz([{ name: 'a.eml', data: ok }]) }]) },
      ]),
      /one level is opened/,
    ],
  ];
  for (const [label, content, reason] of cases) {
    const res = await start(d.id, content);
    t.equal(res.statusCode, 200, `${label}: ${res.body}`);
    const done = await waitImport(h, key, res.json().id);
    t.match(done, { status: 'failed', uploadDeleted: true }, label);
    t.match(done.lastError, reason, label);
  }
  // A zip entry whose directory lies about its size past what the start reads fails as it streams.
  const lie = zip([
    { name: 'ok.eml', data: ok },
    { name: 'lie.mbox', data: Buffer.concat([mbox(many('lie', 40)), Buffer.alloc(20_000, 10)]), declaredSize: 20_000 },
  ]);
  const res = await start(d.id, lie);
  t.equal(res.statusCode, 200, res.body);
  const failed = await waitImport(h, key, res.json().id);
  t.match(failed, { status: 'failed' });
  t.match(failed.lastError, /another size than the archive's directory says/);

  // Nothing was written outside the data folder, nor an entry anywhere in it.
  const names: string[] = [];
  const walk = async (dir: string) => {
    for (const e of await readdir(dir, { withFileTypes: true })) {
      names.push(e.name);
      if (e.isDirectory()) await walk(path.join(dir, e.name));
    }
  };
  await walk(root);
  t.same(
    names.filter((n) => /evil|passwd|\.eml$|\.mbox$/.test(n)),
    [],
    'no entry was written to disk',
  );
});
