import t from 'tap';
import { addDomain, errorOf, keyWith, publish, startDomainsApp } from '../support/domains.ts';
import { many, mbox, message, putChunk, runImport, uploadAll, waitImport } from '../support/imports.ts';

/**
 * Mailbox imports through the api into PostgreSQL: plans, parts, start, the background import
 * into threads, and every refusal. Parts are 1 KiB and steps 3 messages, so small files take
 * several parts and several checkpoints.
 */
const { h, dns } = await startDomainsApp(t, {
  mailboxImports: { chunkBytes: 1024, batchMessages: 3, pollMs: 50 },
});

async function setUp(domain: string) {
  const ws = await h.workspace();
  const d = await addDomain(h, ws.apiKey, domain);
  publish(dns, d.records);
  const verify = await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
  if (!verify.json().receiving?.verified) throw new Error(`not verified: ${verify.body}`);
  const address = async (local: string) => {
    const res = await h.request(ws.apiKey, 'POST', '/addresses', { address: `${local}@${domain}` });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  return { ws, a: await address('a'), b: await address('b'), c: await address('c'), d: await address('d') };
}

const { ws, a, b, c, d } = await setUp('imports.example.com');
const foreign = await setUp('foreign-imports.example.com');
const key = ws.apiKey;

const threadsOf = async (address: string) => {
  const res = await h.request(key, 'GET', `/threads?address=${encodeURIComponent(address)}&limit=100`);
  if (res.statusCode !== 200) throw new Error(res.body);
  return res.json().data as any[];
};

t.test('an mbox in parts: threads, quoting undone, sent mail, counts and the upload deleted', async (t) => {
  const content = mbox([
    { id: 'k1@outside.test', subject: 'Kickoff', body: 'Shall we meet?\nFrom the start, yes.' },
    { id: 'k2@outside.test', subject: 'Re: Kickoff', inReplyTo: 'k1@outside.test', body: 'Tuesday.' },
    {
      id: 'k3@imports.example.com',
      subject: 'Re: Kickoff',
      from: 'A <a@imports.example.com>',
      to: 'olga@outside.test',
      inReplyTo: 'k2@outside.test',
      body: 'Booked.',
    },
    ...many('filler', 4, { body: 'x'.repeat(300) }),
  ]);
  const created = await h.request(key, 'POST', '/imports', {
    addressId: a.id,
    files: [{ name: 'old.mbox', bytes: content.length }],
  });
  t.equal(created.statusCode, 201);
  const plan = created.json();
  t.match(plan, {
    object: 'mailbox_import',
    addressId: a.id,
    address: 'a@imports.example.com',
    status: 'uploading',
    chunkBytes: 1024,
    files: [{ name: 'old.mbox', bytes: content.length, chunks: Math.ceil(content.length / 1024) }],
    options: { keepInbox: true, includeSpam: false, includeTrash: false },
    totalBytes: content.length,
    processedBytes: 0,
    uploadDeleted: false,
  });
  t.ok(plan.files[0].chunks > 2, 'several parts');

  // The first part twice (the second replaces the first), the others once.
  t.equal((await putChunk(h, key, plan.id, 0, 0, content.subarray(0, 1024))).statusCode, 200);
  await uploadAll(h, key, plan, [{ content }]);
  const started = await h.request(key, 'POST', `/imports/${plan.id}/start`);
  t.equal(started.statusCode, 200);
  t.match(started.json(), { formats: ['mbox'] });
  t.ok(['queued', 'running', 'completed'].includes(started.json().status));
  const again = await h.request(key, 'POST', `/imports/${plan.id}/start`);
  t.equal(again.statusCode, 200, 'starting again answers it as it is');

  const done = await waitImport(h, key, plan.id);
  t.match(done, {
    status: 'completed',
    counts: { imported: 7, duplicate: 0, skipped: 0, notImported: 0 },
    processedBytes: content.length,
    uploadDeleted: true,
    lastError: null,
  });
  t.ok(done.startedAt && done.finishedAt);

  const threads = await threadsOf('a@imports.example.com');
  t.equal(threads.length, 5, 'the conversation is one thread, the fillers four');
  const kickoff = threads.find((th) => th.subject === 'Kickoff');
  t.match(kickoff, { messageCount: 3, labels: ['inbox', 'sent'], unread: true });
  const full = (await h.request(key, 'GET', `/threads/${kickoff.id}`)).json();
  t.same(
    full.messages.map((m: any) => m.subject),
    ['Kickoff', 'Re: Kickoff', 'Re: Kickoff'],
  );
  const raw = await h.request(key, 'GET', `/threads/${kickoff.id}/messages/${full.messages[0].id}/raw`);
  t.match(raw.body, /\nFrom the start, yes\./, 'the mboxrd quoting is undone');
  t.notMatch(raw.body, />From the start/);
});

t.test('a batch threads what it filed itself: a reply before its parent, a subject-only reply', async (t) => {
  // One step of three messages, filed without a wait for the read models between them.
  const res = await h.request(key, 'POST', '/addresses', { address: 'f@imports.example.com' });
  t.equal(res.statusCode, 201);
  const content = mbox([
    { id: 'p2@outside.test', subject: 'Re: Plans', inReplyTo: 'p1@outside.test', to: 'f@imports.example.com' },
    { id: 'p1@outside.test', subject: 'Plans', to: 'f@imports.example.com' },
    { id: 'p3@outside.test', subject: 'RE: plans', to: 'f@imports.example.com' },
  ]);
  const started = await runImport(h, key, res.json().id, [{ name: 'plans.mbox', content }]);
  t.match(await waitImport(h, key, started.id), { status: 'completed', counts: { imported: 3 } });
  const threads = await threadsOf('f@imports.example.com');
  t.equal(threads.length, 1, 'one conversation, one thread');
  t.match(threads[0], { subject: 'Re: Plans', messageCount: 3 });
});

t.test('the same mail again, into the same address: every message a duplicate', async (t) => {
  const content = mbox(many('dup', 4));
  const first = await runImport(h, key, b.id, [{ name: 'x.mbox', content }]);
  t.match(await waitImport(h, key, first.id), { status: 'completed', counts: { imported: 4, duplicate: 0 } });
  const second = await runImport(h, key, b.id, [{ name: 'x-again.mbox', content }]);
  t.match(await waitImport(h, key, second.id), { status: 'completed', counts: { imported: 0, duplicate: 4 } });
  t.equal((await threadsOf('b@imports.example.com')).length, 4);
});

t.test('takeout labels, keepInbox false, spam in, trash out, a draft; an .eml beside the mbox', async (t) => {
  const content = mbox([
    { id: 'g1@outside.test', subject: 'Inbox mail', labels: 'Inbox,Unread,Work' },
    { id: 'g2@outside.test', subject: 'Spam mail', labels: 'Spam,Unread' },
    { id: 'g3@outside.test', subject: 'Trash mail', labels: 'Trash,Opened' },
    {
      id: 'g4@imports.example.com',
      subject: 'Sent mail',
      labels: 'Sent,Opened,"Clients, big"',
      from: 'c@imports.example.com',
      to: 'pat@elsewhere.test',
    },
    { id: 'g5@outside.test', subject: 'Archived mail', labels: 'Archived,Opened,Work,Category Updates' },
    { id: 'g6@outside.test', subject: 'Draft mail', labels: 'Draft' },
  ]);
  const eml = Buffer.from(message({ id: 'e1@outside.test', subject: 'Single eml' }).replace(/\n/g, '\r\n'));
  const started = await runImport(
    h,
    key,
    c.id,
    [
      { name: 'takeout.mbox', content },
      { name: 'one.eml', content: eml },
    ],
    { keepInbox: false, includeSpam: true },
  );
  t.same(started.formats, ['mbox', 'eml']);
  const done = await waitImport(h, key, started.id);
  t.match(done, {
    status: 'completed',
    counts: { imported: 6, duplicate: 0, skipped: 1, notImported: 0 },
    labelsCreated: 2,
    labelsSkipped: 0,
  });
  const labels = ((await h.request(key, 'GET', `/labels?address=c@imports.example.com`)).json().data as any[]).filter(
    (l) => l.id.startsWith('lbl_'),
  );
  const byName = Object.fromEntries(labels.map((l) => [l.name, l.id]));
  t.same(Object.keys(byName).sort(), ['Clients, big', 'Work']);
  const threads = await threadsOf('c@imports.example.com');
  const bySubject = Object.fromEntries(threads.map((th) => [th.subject, th]));
  t.match(bySubject['Inbox mail'], { labels: ['archive', byName.Work], unread: true }, 'keepInbox false: archived');
  t.match(bySubject['Spam mail'], { labels: ['spam'], unread: true });
  t.match(bySubject['Sent mail'], { labels: ['archive', 'sent', byName['Clients, big']], unread: false });
  t.match(bySubject['Archived mail'], { labels: ['archive', byName.Work], unread: false });
  t.match(bySubject['Single eml'], { labels: ['archive'] });
  t.notOk(bySubject['Trash mail'], 'trash left out');
  t.notOk(bySubject['Draft mail'], 'a draft is no thread');
  const drafts = (await h.request(key, 'GET', '/drafts?address=c@imports.example.com')).json().data as any[];
  t.match(drafts, [{ subject: 'Draft mail', from: 'Olga <c@imports.example.com>' }], 'but a draft');
});

t.test('refusals of a plan, of parts and of a start', async (t) => {
  const files = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `f${i}.mbox`, bytes: 10 }));
  t.equal((await h.request(key, 'POST', '/imports', { addressId: d.id, files: files(50) })).statusCode, 201);
  t.same(errorOf(await h.request(key, 'POST', '/imports', { addressId: d.id, files: files(51) })), [
    400,
    'too_many_files',
    'files',
  ]);
  t.same(errorOf(await h.request(key, 'POST', '/imports', { addressId: d.id, files: [] })).slice(0, 1), [422]);
  const big = await h.request(key, 'POST', '/imports', {
    addressId: d.id,
    files: [{ name: 'huge.mbox', bytes: 100_000_000_000 }],
  });
  t.equal(big.statusCode, 201, '100 GB is the edge');
  t.equal(big.json().files[0].chunks, Math.ceil(100_000_000_000 / 1024));
  const past = await h.request(key, 'POST', '/imports', {
    addressId: d.id,
    files: [{ name: 'huge.mbox', bytes: 100_000_000_001 }],
  });
  t.same(errorOf(past), [422, 'invalid_parameter', 'files.0.bytes']);
  t.same(errorOf(await h.request(key, 'POST', '/imports', { addressId: foreign.a.id, files: files(1) })), [
    403,
    'address_not_allowed',
    'addressId',
  ]);

  const content = mbox(many('parts', 6));
  const plan = (
    await h.request(key, 'POST', '/imports', { addressId: d.id, files: [{ name: 'p.mbox', bytes: content.length }] })
  ).json();
  const last = plan.files[0].chunks - 1;
  // Nothing uploaded: every part is missing, and named.
  const missing = await h.request(key, 'POST', `/imports/${plan.id}/start`);
  t.same(errorOf(missing), [412, 'missing_chunks', 'files']);
  const every = Array.from({ length: last + 1 }, (_, i) => i).join(', ');
  t.match(missing.json().error.message, `file 0 ("p.mbox") parts ${every}.`);
  // A truncated part is refused and kept out; one too long is 413; an empty one 400.
  t.same(errorOf(await putChunk(h, key, plan.id, 0, 0, content.subarray(0, 1000))), [
    422,
    'invalid_parameter',
    'chunk',
  ]);
  t.same(errorOf(await putChunk(h, key, plan.id, 0, 0, Buffer.alloc(1025, 65))).slice(0, 2), [413, 'upload_too_large']);
  t.same(errorOf(await putChunk(h, key, plan.id, 0, 0, Buffer.alloc(0))).slice(0, 2), [400, 'upload_empty']);
  t.same(errorOf(await putChunk(h, key, plan.id, 0, last + 1, Buffer.alloc(10))), [422, 'invalid_parameter', 'chunk']);
  t.same(errorOf(await putChunk(h, key, plan.id, 1, 0, Buffer.alloc(10))), [422, 'invalid_parameter', 'file']);
  for (let c = 0; c < last; c++) await putChunk(h, key, plan.id, 0, c, content.subarray(c * 1024, (c + 1) * 1024));
  // The last part cut short is refused: it is still missing, and alone named.
  const lastBytes = content.subarray(last * 1024);
  t.same(errorOf(await putChunk(h, key, plan.id, 0, last, lastBytes.subarray(0, lastBytes.length - 1))), [
    422,
    'invalid_parameter',
    'chunk',
  ]);
  const one = await h.request(key, 'POST', `/imports/${plan.id}/start`);
  t.same(errorOf(one), [412, 'missing_chunks', 'files']);
  t.match(one.json().error.message, `file 0 ("p.mbox") parts ${last}.`);
  const foreignGet = await h.request(foreign.ws.apiKey, 'GET', `/imports/${plan.id}`);
  t.same(errorOf(foreignGet), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(foreign.ws.apiKey, 'POST', `/imports/${plan.id}/start`)), [
    404,
    'resource_not_found',
    'id',
  ]);

  // Not mail: a zip and an executable, by their bytes whatever their names.
  for (const [bytes, code] of [
    [Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(60)]), 'unsupported_file'],
    [Buffer.concat([Buffer.from('MZ'), Buffer.alloc(60)]), 'upload_dangerous'],
  ] as const) {
    const other = (
      await h.request(key, 'POST', '/imports', { addressId: d.id, files: [{ name: 'mail.mbox', bytes: bytes.length }] })
    ).json();
    await uploadAll(h, key, other, [{ content: bytes }]);
    t.same(errorOf(await h.request(key, 'POST', `/imports/${other.id}/start`)), [400, code, 'files.0']);
  }

  // A cancelled import takes no more parts and cannot start.
  const cancelled = await h.request(key, 'POST', `/imports/${plan.id}/cancel`);
  t.match(cancelled.json(), { status: 'cancelled', uploadDeleted: true });
  t.same(errorOf(await putChunk(h, key, plan.id, 0, 0, content.subarray(0, 1024))), [409, 'import_settled', 'id']);
  t.same(errorOf(await h.request(key, 'POST', `/imports/${plan.id}/start`)), [409, 'import_settled', 'id']);
  t.equal((await h.request(key, 'POST', `/imports/${plan.id}/cancel`)).json().status, 'cancelled', 'again: as it is');
});

t.test('one import running per address; cancel mid-run stops it and keeps what it filed', async (t) => {
  const content = mbox(many('long', 60, { body: 'y'.repeat(200) }));
  const first = await runImport(h, key, d.id, [{ name: 'long.mbox', content }]);
  const running = await waitImport(h, key, first.id, (i) => i.status === 'running' && i.counts.imported >= 3);
  t.ok(running.processedBytes > 0 && running.processedBytes < content.length, 'progress moves');
  t.same(errorOf(await h.request(key, 'POST', '/imports', { addressId: d.id, files: [{ name: 'x', bytes: 5 }] })), [
    409,
    'already_running',
    'addressId',
  ]);
  const oneCall = await h.request(key, 'POST', `/imports/upload?addressId=${d.id}&filename=x.eml`, Buffer.from('x'), {
    'content-type': 'message/rfc822',
  });
  t.same(errorOf(oneCall), [409, 'already_running', 'addressId']);
  const other = await h.request(key, 'POST', '/imports', { addressId: a.id, files: [{ name: 'x', bytes: 5 }] });
  t.equal(other.statusCode, 201, 'another address is free');

  const cancel = await h.request(key, 'POST', `/imports/${first.id}/cancel`);
  t.match(cancel.json(), { status: 'cancelled', uploadDeleted: true });
  // Settled: the run stops within a few messages and the counts stay where they were.
  await new Promise((r) => setTimeout(r, 1000));
  const after = (await h.request(key, 'GET', `/imports/${first.id}`)).json();
  t.equal(after.status, 'cancelled');
  const threads = await threadsOf('d@imports.example.com');
  t.ok(threads.length > 0 && threads.length < 60, `part of the mail was filed (${threads.length})`);
  const again = await h.request(key, 'POST', '/imports', { addressId: d.id, files: [{ name: 'x', bytes: 5 }] });
  t.equal(again.statusCode, 201, 'the address is free again');

  // The same file again: what the cancelled run filed is a duplicate and the rest is filed, each
  // once: the keys it claimed for messages prepared ahead and never filed were freed.
  await h.request(key, 'POST', `/imports/${again.json().id}/cancel`);
  const rerun = await runImport(h, key, d.id, [{ name: 'long.mbox', content }]);
  const settled = await waitImport(h, key, rerun.id);
  t.equal(settled.counts.imported + settled.counts.duplicate, 60, 'every message counted once');
  t.ok(settled.counts.imported > 0, `the rest filed (${settled.counts.imported})`);
  t.equal((await threadsOf('d@imports.example.com')).length, 60, 'every message in its thread');
});

t.test('create, upload and start in one call', async (t) => {
  const eml = Buffer.from(message({ id: 'one@outside.test', subject: 'One call', to: 'b@imports.example.com' }));
  const res = await h.request(key, 'POST', `/imports/upload?addressId=${b.id}&keepInbox=false`, eml, {
    'content-type': 'message/rfc822',
    'x-filename': encodeURIComponent('Ünïcode.eml'),
  });
  t.equal(res.statusCode, 201, res.body);
  t.match(res.json(), { status: 'queued', files: [{ name: 'Ünïcode.eml', bytes: eml.length, chunks: 1 }] });
  t.match(await waitImport(h, key, res.json().id), { status: 'completed', counts: { imported: 1 } });
  const thread = (await threadsOf('b@imports.example.com')).find((th) => th.subject === 'One call');
  t.match(thread, { labels: ['archive'] });

  const up = (query: string, body: Buffer, headers: Record<string, string> = {}) =>
    h.request(key, 'POST', `/imports/upload?addressId=${b.id}${query}`, body, {
      'content-type': 'application/octet-stream',
      ...headers,
    });
  t.same(errorOf(await up('', eml)), [400, 'upload_no_name', 'filename']);
  t.same(errorOf(await up('&filename=e.eml', Buffer.alloc(0))).slice(0, 2), [400, 'upload_empty']);
  t.same(errorOf(await up('&filename=e.eml', Buffer.from('PK\x03\x04zip'))), [400, 'unsupported_file', 'filename']);
  t.same(errorOf(await up('&filename=e.eml', Buffer.from('\x7fELF....'))), [400, 'upload_dangerous', 'filename']);
  t.same(errorOf(await up('&filename=e.eml', eml, { 'content-length': '100000000001' })).slice(0, 2), [
    413,
    'upload_too_large',
  ]);
  // A large mbox in one call: stored part by part.
  const long = mbox(many('onecall', 5, { to: 'b@imports.example.com' }));
  const many5 = await up('&filename=five.mbox', long);
  t.equal(many5.statusCode, 201);
  t.equal(many5.json().files[0].chunks, Math.ceil(long.length / 1024));
  t.match(await waitImport(h, key, many5.json().id), { status: 'completed', counts: { imported: 5 } });
});

t.test('lists: newest first, by address, paged by id; narrowed keys see their addresses only', async (t) => {
  const all = (await h.request(key, 'GET', '/imports?limit=100')).json().data as any[];
  t.ok(all.length >= 10);
  const pages: string[] = [];
  let cursor: string | null = null;
  let added = false;
  for (;;) {
    const res = await h.request(key, 'GET', `/imports?limit=3${cursor ? `&cursor=${cursor}` : ''}`);
    t.equal(res.statusCode, 200);
    const page = res.json();
    pages.push(...page.data.map((i: any) => i.id));
    if (!added) {
      // Rows added between pages come before the cursor: they do not shift the walk.
      await h.request(key, 'POST', '/imports', { addressId: b.id, files: [{ name: 'late', bytes: 5 }] });
      added = true;
    }
    if (!page.hasMore) break;
    cursor = page.data[page.data.length - 1].id;
  }
  t.same(
    pages,
    all.map((i) => i.id),
    'every import once, newest first',
  );
  const ofD = (await h.request(key, 'GET', `/imports?addressId=${d.id}`)).json().data as any[];
  t.ok(ofD.length > 0 && ofD.every((i) => i.addressId === d.id));
  t.same(errorOf(await h.request(key, 'GET', '/imports?cursor=imp_000000000000000000000000')), [
    400,
    'invalid_cursor',
    'cursor',
  ]);

  const narrowed = await keyWith(h, key, {
    name: 'only b',
    scopes: ['threads:read', 'threads:write'],
    addressAllowlist: ['b@imports.example.com'],
  });
  const seen = (await h.request(narrowed, 'GET', '/imports?limit=100')).json().data as any[];
  t.ok(seen.length > 0 && seen.every((i) => i.address === 'b@imports.example.com'));
  const other = all.find((i) => i.address !== 'b@imports.example.com');
  t.same(errorOf(await h.request(narrowed, 'GET', `/imports/${other.id}`)), [404, 'resource_not_found', 'id']);
  t.same(
    errorOf(await h.request(narrowed, 'POST', '/imports', { addressId: a.id, files: [{ name: 'x', bytes: 5 }] })),
    [403, 'address_not_allowed', 'addressId'],
  );
  const readOnly = await keyWith(h, key, { name: 'read', scopes: ['threads:read'] });
  t.equal(
    (await h.request(readOnly, 'POST', '/imports', { addressId: b.id, files: [{ name: 'x', bytes: 5 }] })).statusCode,
    403,
  );
  t.same(errorOf(await h.request(key, 'GET', '/imports/imp_000000000000000000000000')), [
    404,
    'resource_not_found',
    'id',
  ]);
});

t.test('past the label limit, names are skipped and counted; the mail still comes in', async (t) => {
  for (let i = 0; i < 99; i++) {
    const res = await h.request(key, 'POST', '/labels', { address: 'a@imports.example.com', name: `Old ${i}` });
    if (res.statusCode !== 201) throw new Error(res.body);
  }
  const content = mbox([
    { id: 'l1@outside.test', subject: 'First new label', labels: 'Inbox,Opened,Fresh' },
    { id: 'l2@outside.test', subject: 'Past the limit', labels: 'Inbox,Opened,Overflow,Old 3' },
    { id: 'l3@outside.test', subject: 'Again past it', labels: 'Inbox,Opened,Overflow' },
  ]);
  const started = await runImport(h, key, a.id, [{ name: 'labels.mbox', content }]);
  t.match(await waitImport(h, key, started.id), {
    status: 'completed',
    counts: { imported: 3 },
    labelsCreated: 1,
    labelsSkipped: 1,
  });
  const threads = await threadsOf('a@imports.example.com');
  const past = threads.find((th) => th.subject === 'Past the limit');
  t.equal(past.labels.length, 2, 'inbox and the existing label only');
  t.equal(past.unread, false);
});

t.test('takeout drafts become drafts of the address, once; chats and discarded drafts skipped', async (t) => {
  const res = await h.request(key, 'POST', '/addresses', { address: 'e@imports.example.com' });
  t.equal(res.statusCode, 201);
  const e = res.json();
  const attachment = Buffer.from('the plan, attached');
  const draft = [
    'X-Gmail-Labels: Draft,Work',
    'From: "Me, Myself" <me@gmail.test>',
    'To: Pat <pat@elsewhere.test>, undisclosed-recipients:;',
    'Cc: kim@elsewhere.test',
    'Bcc: boss@elsewhere.test',
    'Subject: Plan for Tuesday',
    'Date: Tue, 02 Jan 2024 10:00:00 +0000',
    'Message-ID: <d1@gmail.test>',
    'In-Reply-To: <k1@outside.test>',
    'References: <k0@outside.test> <k1@outside.test>',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="mix"',
    '',
    '--mix',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'See the plan.',
    '--alt',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p>See <b>the plan</b>.</p>',
    '--alt--',
    '--mix',
    'Content-Type: text/plain; name="plan.txt"',
    'Content-Disposition: attachment; filename="plan.txt"',
    'Content-Transfer-Encoding: base64',
    '',
    attachment.toString('base64'),
    '--mix--',
    '',
  ].join('\n');
  const tooMany = Array.from({ length: 51 }, (_, i) => `r${i}@elsewhere.test`).join(', ');
  const content = Buffer.concat([
    Buffer.from(`From 1@xxx Tue Jan  2 10:00:00 2024\n${draft}\n`),
    mbox([
      { id: 'd2@gmail.test', subject: 'Inbox mail', labels: 'Inbox,Opened', to: 'e@imports.example.com' },
      { id: 'd3@gmail.test', subject: 'Discarded draft', labels: 'Draft,Trash' },
      { id: 'd4@gmail.test', subject: 'A chat', labels: 'Chat' },
      { id: 'd5@gmail.test', subject: 'Too many', labels: 'Draft', to: tooMany },
    ]),
  ]);
  const started = await runImport(h, key, e.id, [{ name: 'takeout.mbox', content }], { includeTrash: true });
  t.match(await waitImport(h, key, started.id), {
    status: 'completed',
    counts: { imported: 2, duplicate: 0, skipped: 2, notImported: 1 },
  });
  const listDrafts = async () =>
    (await h.request(key, 'GET', '/drafts?address=e@imports.example.com')).json().data as any[];
  const drafts = await listDrafts();
  t.equal(drafts.length, 1, 'one draft');
  const got = (await h.request(key, 'GET', `/drafts/${drafts[0].id}`)).json();
  t.match(got, {
    object: 'draft',
    from: '"Me, Myself" <e@imports.example.com>',
    address: 'e@imports.example.com',
    to: ['Pat <pat@elsewhere.test>'],
    cc: ['kim@elsewhere.test'],
    bcc: ['boss@elsewhere.test'],
    subject: 'Plan for Tuesday',
    text: /^See the plan\.\s*$/,
    html: '<p>See <b>the plan</b>.</p>',
    inReplyTo: 'k1@outside.test',
    references: ['k0@outside.test', 'k1@outside.test'],
    attachments: [{ filename: 'plan.txt', contentType: 'text/plain', size: attachment.length }],
  });
  const fileId = got.attachments[0].fileId;
  const file = await h.request(key, 'GET', `/files/${fileId}/content`);
  t.equal(file.statusCode, 200);
  t.equal(file.body, attachment.toString(), 'the attachment is an upload of the mailbox');
  t.match((await h.request(key, 'GET', `/files/${fileId}`)).json(), {
    source: 'upload',
    address: 'e@imports.example.com',
  });
  t.same(errorOf(await h.request(key, 'DELETE', `/files/${fileId}`)), [409, 'file_in_use', 'id'], 'the draft holds it');
  t.same(
    (await threadsOf('e@imports.example.com')).map((th) => th.subject),
    ['Inbox mail'],
    'the draft is no thread',
  );
  t.same(
    errorOf(await h.request(foreign.ws.apiKey, 'GET', `/drafts/${drafts[0].id}`)),
    [404, 'resource_not_found', 'id'],
    "another workspace's key does not see it",
  );

  const again = await runImport(h, key, e.id, [{ name: 'again.mbox', content }], { includeTrash: true });
  t.match(await waitImport(h, key, again.id), {
    status: 'completed',
    counts: { imported: 0, duplicate: 2, skipped: 2, notImported: 1 },
  });
  t.equal((await listDrafts()).length, 1, 'a second import makes no second draft');
});
