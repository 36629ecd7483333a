import { createHash } from 'node:crypto';
import t from 'tap';
import { addDomain, errorOf, keyWith, publish, startDomainsApp } from '../support/domains.ts';
import { ATTACHMENT, openZip, reportWithAttachment, waitExport } from '../support/exports.ts';
import { mbox, runImport, waitImport } from '../support/imports.ts';

/**
 * Workspace exports through the api into PostgreSQL: the preview, the list, the background zip
 * (opened with unzip and checked entry by entry), downloads in ranges, and every refusal. Pages
 * are 2 threads, so a small workspace still takes several pages and progress records.
 */
const { h, dns } = await startDomainsApp(t, {
  mailboxImports: { chunkBytes: 64 * 1024, pollMs: 50 },
  exports: { pollMs: 50, pageRows: 2, progressEveryMs: 0, retentionEveryMs: 100 },
});

const READ = [
  'threads:read',
  'emails:read',
  'drafts:read',
  'files:read',
  'labels:read',
  'contacts:read',
  'audiences:read',
  'calendar:read',
  'templates:read',
  'rules:read',
];

async function setUp(domain: string) {
  const ws = await h.workspace();
  const d = await addDomain(h, ws.apiKey, domain);
  publish(dns, d.records);
  await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
  const address = async (local: string) => {
    const res = await h.request(ws.apiKey, 'POST', '/addresses', { address: `${local}@${domain}` });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  return { ws, a: await address('a'), b: await address('b') };
}

const withAttachment = reportWithAttachment('a@export.example.com');

const { ws, a, b } = await setUp('export.example.com');
const foreign = await setUp('foreign-export.example.com');
const key = ws.apiKey;

// The workspace: mail in two addresses (one with a label, an attachment, a body line that reads
// `From `), contacts in an audience, a template of two versions, a rule.
const mailA = Buffer.concat([
  mbox([
    { id: 'k1@outside.test', subject: 'Kickoff', body: 'Shall we?\nFrom the start, yes.', labels: 'Inbox,Work' },
    { id: 'k2@outside.test', subject: 'Re: Kickoff', inReplyTo: 'k1@outside.test', labels: 'Inbox,Work' },
    { id: 'lone@outside.test', subject: 'Alone' },
  ]),
  Buffer.from(`From MAILER-DAEMON Wed Jan  3 10:00:00 2024\n${withAttachment}\n`),
]);
const importA = await runImport(h, key, a.id, [{ name: 'a.mbox', content: mailA }]);
const importB = await runImport(h, key, b.id, [
  {
    name: 'b.mbox',
    content: mbox([
      { id: 'b1@outside.test', subject: 'For b', to: 'b@export.example.com' },
      { id: 'b2@outside.test', subject: 'Also b', to: 'b@export.example.com' },
    ]),
  },
]);
await waitImport(h, key, importA.id);
await waitImport(h, key, importB.id);
const audience = (await h.request(key, 'POST', '/audiences', { name: 'Customers' })).json();
for (const [email, name] of [
  ['ann@example.com', 'Ann; Smith'],
  ['bob@example.com', 'Bob'],
])
  await h.request(key, 'POST', '/contacts', { email, name, audienceIds: [audience.id], attributes: { plan: 'pro' } });
const template = await h.request(key, 'POST', '/templates', {
  name: 'Welcome',
  subject: 'Hi',
  html: '<p>Hi there</p>',
  publish: true,
});
await h.request(key, 'PATCH', `/templates/${template.json().id}`, { html: '<p>Hi again</p>' });
const rule = await h.request(key, 'POST', `/rules?address=${encodeURIComponent(a.address)}`, {
  name: 'Reports',
  conditions: [{ field: 'has_attachment', op: 'equals', value: 'true' }],
  actions: [{ type: 'label', value: 'archive' }],
});

let ready: any;

t.test('the workspace is there to export', async (t) => {
  t.equal(template.statusCode, 201, template.body);
  t.equal(rule.statusCode, 201, rule.body);
});

t.test('preview: allowed, counts from the read models, nothing under way', async (t) => {
  const res = await h.request(key, 'GET', '/exports/preview');
  t.equal(res.statusCode, 200, res.body);
  const p = res.json();
  t.match(p, {
    object: 'export_preview',
    allowed: true,
    reason: null,
    activeExportId: null,
    counts: {
      threads: 5,
      attachments: 1,
      attachmentBytes: ATTACHMENT.length,
      deletedFiles: 0,
      contacts: 2,
      audiences: 2,
      calendarEvents: 0,
      templates: 1,
      rules: 1,
      labels: 1,
      notes: 0,
      addresses: 2,
    },
  });
  t.ok(Math.abs(Date.parse(p.nextAvailableAt) - Date.now()) < 5000, 'available now');
});

t.test('start: 201 queued, then ready with a zip; one at a time, once a day', async (t) => {
  const res = await h.request(key, 'POST', '/exports');
  t.equal(res.statusCode, 201, res.body);
  const e = res.json();
  t.match(e, {
    object: 'export',
    id: /^exp_[0-9a-f]{24}$/,
    status: 'queued',
    phase: 'queued',
    createdBy: { kind: 'apiKey' },
    sizeBytes: null,
    fileName: null,
    threadsDone: 0,
    error: null,
  });
  const running = await h.request(key, 'POST', '/exports');
  t.same(errorOf(running), [409, 'already_running', null]);
  t.equal((await h.request(key, 'GET', '/exports/preview')).json().activeExportId, e.id);

  ready = await waitExport(h, key, e.id);
  t.match(ready, {
    status: 'ready',
    phase: 'done',
    threadsDone: 5,
    threadsTotal: 5,
    fileName: new RegExp(`^workspace-export-\\d{4}-\\d{2}-\\d{2}-${e.id}\\.zip$`),
    counts: { threads: 5, messages: 6, contacts: 2, audiences: 2, templates: 1, templateVersions: 2, rules: 1 },
  });
  t.ok(ready.sizeBytes > 0);
  t.equal(Date.parse(ready.expiresAt) - Date.parse(ready.finishedAt), 365 * 24 * 3600 * 1000, 'kept 365 days');

  const limited = await h.request(key, 'POST', '/exports');
  t.same(errorOf(limited), [429, 'export_limit_reached', null]);
  const wait = Number(limited.headers['retry-after']);
  t.ok(wait > 86_000 && wait <= 86_400, `Retry-After within a day of the last (${wait})`);
  const preview = (await h.request(key, 'GET', '/exports/preview')).json();
  t.equal(preview.activeExportId, null);
  t.ok(Math.abs(Date.parse(preview.nextAvailableAt) - (Date.parse(e.createdAt) + 86_400_000)) < 1000);

  const { rows } = await h.system.database.pool.query(
    `SELECT type, data FROM es_events WHERE stream_id = $1 ORDER BY position`,
    [`ws-${ws.workspaceId}.exports`],
  );
  const types = rows.map((r) => r.type);
  t.same([types[0], types[1], types.at(-1)], ['ExportRequested', 'ExportStarted', 'ExportCompleted']);
  t.ok(types.filter((x) => x === 'ExportProgressed').length >= 5, 'progress recorded page by page');
  t.ok(
    rows.some((r) => r.type === 'ExportProgressed' && r.data.phase === 'mail' && r.data.threadsDone === 2),
    'threadsDone moves through the mail',
  );
});

t.test('the zip: mbox per address and label, vCards, audiences, calendar, templates, manifest', async (t) => {
  const res = await h.request(key, 'GET', `/exports/${ready.id}/content`);
  t.equal(res.statusCode, 200);
  t.equal(res.headers['content-type'], 'application/zip');
  t.match(res.headers['content-disposition'], `attachment; filename="${ready.fileName}"`);
  t.equal(res.headers['accept-ranges'], 'bytes');
  t.equal(Number(res.headers['content-length']), ready.sizeBytes);
  const zip = await openZip(t, res.rawPayload);
  t.match(zip.tested, /No errors detected/);
  const tpl = template.json().id;
  t.same(
    zip.names.sort(),
    [
      'addresses/addresses.json',
      `audiences/${audience.id}.json`,
      ...(await h.request(key, 'GET', '/audiences'))
        .json()
        .data.filter((x: any) => x.id !== audience.id)
        .map((x: any) => `audiences/${x.id}.json`),
      'calendar/calendar.ics',
      'contacts/contacts.vcf',
      'labels/labels.json',
      'mail/a@export.example.com/inbox.mbox',
      'mail/a@export.example.com/labels/Work.mbox',
      'mail/b@export.example.com/inbox.mbox',
      'manifest.json',
      'rules/rules.json',
      `templates/${tpl}/template.json`,
      `templates/${tpl}/versions/1.html`,
      `templates/${tpl}/versions/1.json`,
      `templates/${tpl}/versions/2.html`,
      `templates/${tpl}/versions/2.json`,
    ].sort(),
  );

  const inbox = (await zip.read('mail/a@export.example.com/inbox.mbox')).toString();
  t.equal(inbox.match(/^From /gm)?.length, 4, 'four messages in a@ inbox');
  t.match(inbox, /\n>From the start, yes\./, 'a body line reading From is quoted (mboxrd)');
  t.notMatch(inbox, /\r\n/, 'LF line ends');
  t.match(inbox, ATTACHMENT.toString('base64'), 'the attachment, inside its message');
  const work = (await zip.read('mail/a@export.example.com/labels/Work.mbox')).toString();
  t.equal(work.match(/^From /gm)?.length, 2, 'the labelled thread: two messages');
  t.equal((await zip.read('mail/b@export.example.com/inbox.mbox')).toString().match(/^From /gm)?.length, 2);

  const cards = (await zip.read('contacts/contacts.vcf')).toString();
  t.equal(cards.match(/BEGIN:VCARD\r\nVERSION:4\.0\r\n/g)?.length, 2);
  t.match(cards, 'FN:Ann\\; Smith\r\n');
  t.match(cards, 'EMAIL:bob@example.com\r\n');
  t.match(cards, 'X-ATTRIBUTE;KEY="plan":pro\r\n');

  const members = JSON.parse((await zip.read(`audiences/${audience.id}.json`)).toString());
  t.match(members, { id: audience.id, name: 'Customers' });
  t.same(members.members.map((m: any) => m.email).sort(), ['ann@example.com', 'bob@example.com']);
  t.match(
    (await zip.read('calendar/calendar.ics')).toString(),
    /^BEGIN:VCALENDAR\r\nVERSION:2\.0\r\n.*END:VCALENDAR\r\n$/s,
  );
  t.equal((await zip.read(`templates/${tpl}/versions/2.html`)).toString(), '<p>Hi again</p>');
  t.match(JSON.parse((await zip.read(`templates/${tpl}/versions/1.json`)).toString()), {
    templateId: tpl,
    version: 1,
    published: true,
    subject: 'Hi',
    hasHtml: true,
  });
  t.match(JSON.parse((await zip.read('rules/rules.json')).toString()), [{ name: 'Reports', address: a.address }]);
  t.match(JSON.parse((await zip.read('labels/labels.json')).toString()), [{ name: 'Work', address: a.address }]);
  t.same(
    JSON.parse((await zip.read('addresses/addresses.json')).toString()).map((x: any) => x.address),
    [a.address, b.address],
  );

  const manifest = JSON.parse((await zip.read('manifest.json')).toString());
  t.match(manifest, {
    object: 'workspace_export',
    exportId: ready.id,
    workspaceId: ws.workspaceId,
    counts: ready.counts,
  });
  t.same(manifest.entries.map((e: any) => e.path).sort(), zip.names.filter((n) => n !== 'manifest.json').sort());
  for (const entry of manifest.entries) {
    const bytes = await zip.read(entry.path);
    t.equal(createHash('sha256').update(bytes).digest('hex'), entry.sha256, `${entry.path}: its checksum`);
    t.equal(bytes.length, entry.bytes);
  }
});

t.test('download in ranges: 206 with Content-Range, resumed to the whole file', async (t) => {
  const whole = (await h.request(key, 'GET', `/exports/${ready.id}/content`)).rawPayload;
  const size = whole.length;
  const first = await h.request(key, 'GET', `/exports/${ready.id}/content`, undefined, { range: 'bytes=0-99' });
  t.equal(first.statusCode, 206);
  t.equal(first.headers['content-range'], `bytes 0-99/${size}`);
  t.equal(first.headers['content-length'], '100');
  const etag = String(first.headers.etag);
  const rest = await h.request(key, 'GET', `/exports/${ready.id}/content`, undefined, {
    range: 'bytes=100-',
    'if-range': etag,
  });
  t.equal(rest.statusCode, 206);
  t.equal(rest.headers['content-range'], `bytes 100-${size - 1}/${size}`);
  t.ok(Buffer.concat([first.rawPayload, rest.rawPayload]).equals(whole), 'the parts make the file');
  const tail = await h.request(key, 'GET', `/exports/${ready.id}/content`, undefined, { range: 'bytes=-10' });
  t.ok(tail.rawPayload.equals(whole.subarray(-10)), 'a suffix range');
  const other = await h.request(key, 'GET', `/exports/${ready.id}/content`, undefined, {
    range: 'bytes=100-',
    'if-range': '"another"',
  });
  t.equal(other.statusCode, 200, 'If-Range of another file: the whole file');
  const past = await h.request(key, 'GET', `/exports/${ready.id}/content`, undefined, { range: `bytes=${size}-` });
  t.same(errorOf(past), [416, 'range_not_satisfiable', 'Range']);
  t.equal(past.headers['content-range'], `bytes */${size}`);
});

t.test('list: offset paging, newest first, total and hasMore', async (t) => {
  const other = await setUp('paging-export.example.com');
  const k = other.ws.apiKey;
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await h.request(k, 'POST', '/exports');
    t.equal(res.statusCode, 201, res.body);
    ids.push(res.json().id);
    await waitExport(h, k, res.json().id);
    // Each export moved back in time (its event and its row), as if made on an earlier day.
    await h.system.database.pool.query(
      "UPDATE exports SET created_at = created_at - interval '1 day' * (4 - $2::int) WHERE id = $1",
      [res.json().id, i],
    );
    await h.system.database.pool.query(
      `UPDATE es_events SET data = jsonb_set(data, '{createdAt}', to_jsonb((SELECT created_at FROM exports WHERE id = $1)))
       WHERE stream_id = $2 AND type = 'ExportRequested' AND data->>'exportId' = $1`,
      [res.json().id, `ws-${other.ws.workspaceId}.exports`],
    );
  }
  const page1 = (await h.request(k, 'GET', '/exports?limit=2')).json();
  t.same(
    page1.data.map((e: any) => e.id),
    [ids[2], ids[1]],
  );
  t.match(page1, { object: 'list', total: 3, hasMore: true });
  const page2 = (await h.request(k, 'GET', '/exports?limit=2&offset=2')).json();
  t.same(
    page2.data.map((e: any) => e.id),
    [ids[0]],
  );
  t.match(page2, { total: 3, hasMore: false });
  t.same((await h.request(k, 'GET', '/exports?offset=10')).json().data, []);
  t.equal((await h.request(k, 'GET', '/exports?limit=100')).statusCode, 200);
  t.same(errorOf(await h.request(k, 'GET', '/exports?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(k, 'GET', '/exports?limit=0')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(k, 'GET', '/exports?offset=-1')), [422, 'invalid_parameter', 'offset']);
  t.same(errorOf(await h.request(k, 'GET', '/exports?cursor=x')), [422, 'unknown_parameter', 'cursor']);
});

t.test("a foreign workspace's export is 404, as a missing one", async (t) => {
  const fk = foreign.ws.apiKey;
  for (const url of [`/exports/${ready.id}`, `/exports/${ready.id}/content`])
    t.same(errorOf(await h.request(fk, 'GET', url)), [404, 'resource_not_found', 'id'], url);
  t.same(errorOf(await h.request(key, 'GET', '/exports/exp_000000000000000000000000')), [
    404,
    'resource_not_found',
    'id',
  ]);
  t.same(errorOf(await h.request(key, 'GET', '/exports/nonsense')), [404, 'resource_not_found', 'id']);
  t.equal((await h.request(fk, 'GET', '/exports')).json().total, 0);
});

t.test('not ready: 409 export_not_ready; past 365 days: 409 expired, and the retention deletes the zip', async (t) => {
  const fk = foreign.ws.apiKey;
  const started = (await h.request(fk, 'POST', '/exports')).json();
  const early = await h.request(fk, 'GET', `/exports/${started.id}/content`);
  if (early.statusCode === 409) t.same(errorOf(early), [409, 'export_not_ready', 'id']);
  const done = await waitExport(h, fk, started.id);
  t.equal(done.status, 'ready');
  await h.system.database.pool.query("UPDATE exports SET expires_at = now() - interval '1 second' WHERE id = $1", [
    done.id,
  ]);
  t.same(errorOf(await h.request(fk, 'GET', `/exports/${done.id}/content`)), [409, 'expired', 'id']);
  t.equal((await h.request(fk, 'GET', `/exports/${done.id}`)).json().status, 'expired');

  const { rows } = await h.system.database.pool.query('SELECT sha256 FROM export_runs WHERE id = $1', [done.id]);
  t.ok(await h.system.blobs.has(rows[0].sha256), 'the zip is kept until the retention runs');
  await h.system.database.pool.query("UPDATE export_runs SET expires_at = now() - interval '1 second' WHERE id = $1", [
    done.id,
  ]);
  await waitExport(h, fk, done.id, (e) => e.sizeBytes !== null && e.status === 'expired' && e.phase === 'done');
  // The retention deletes the zip, then records it: the record is what says its pass is done.
  const recorded = async () =>
    (
      await h.system.database.pool.query(
        "SELECT count(*)::int AS n FROM es_events WHERE stream_id = $1 AND type = 'ExportFileDeleted'",
        [`ws-${foreign.ws.workspaceId}.exports`],
      )
    ).rows[0].n;
  for (let i = 0; i < 100 && (await recorded()) === 0; i++) await new Promise((r) => setTimeout(r, 50));
  t.equal(await h.system.blobs.has(rows[0].sha256), false, 'the retention deleted the zip');
  t.equal(await recorded(), 1, 'recorded once');
  t.same(errorOf(await h.request(fk, 'GET', `/exports/${done.id}/content`)), [409, 'expired', 'id']);
});

t.test('a write that fails: the export fails with its error, 409 export_not_ready, and does not count', async (t) => {
  const broken = await setUp('failing-export.example.com');
  const k = broken.ws.apiKey;
  const imported = await runImport(h, k, broken.a.id, [
    { name: 'one.mbox', content: mbox([{ id: 'lost@outside.test', subject: 'Lost', to: broken.a.address }]) },
  ]);
  await waitImport(h, k, imported.id);
  const { rows } = await h.system.database.pool.query(
    'SELECT raw_sha256 FROM thread_messages WHERE workspace_id = $1',
    [broken.ws.workspaceId],
  );
  await h.system.blobs.delete(rows[0].raw_sha256);
  const started = (await h.request(k, 'POST', '/exports')).json();
  const failed = await waitExport(h, k, started.id);
  t.match(failed, { status: 'failed', error: /raw message .* is missing/, sizeBytes: null, fileName: null });
  t.same(errorOf(await h.request(k, 'GET', `/exports/${started.id}/content`)), [409, 'export_not_ready', 'id']);
  const preview = (await h.request(k, 'GET', '/exports/preview')).json();
  t.match(preview, { activeExportId: null });
  t.ok(Date.parse(preview.nextAvailableAt) <= Date.now() + 1000, 'a failed export does not hold the day');
  t.equal((await h.request(k, 'POST', '/exports')).statusCode, 201, 'another may start at once');
});

t.test('who may export: scopes, roles, narrowed and test keys', async (t) => {
  const readAll = await keyWith(h, key, { name: 'Reader', scopes: READ });
  t.equal((await h.request(readAll, 'GET', '/exports/preview')).json().allowed, true, 'a key with no role');
  const nine = await keyWith(h, key, { name: 'Nine', scopes: READ.filter((s) => s !== 'calendar:read') });
  for (const [method, url] of [
    ['GET', '/exports/preview'],
    ['GET', '/exports'],
    ['POST', '/exports'],
    ['GET', `/exports/${ready.id}`],
    ['GET', `/exports/${ready.id}/content`],
  ] as const)
    t.same(errorOf(await h.request(nine, method, url)), [403, 'insufficient_scope', null], `${method} ${url}`);

  const role = await h.request(key, 'POST', '/roles', { name: 'Readers', permissions: READ });
  t.equal(role.statusCode, 201, role.body);
  const limited = await keyWith(h, key, { name: 'Limited', scopes: READ, roleId: role.json().id });
  const preview = (await h.request(limited, 'GET', '/exports/preview')).json();
  t.match(preview, { allowed: false, reason: 'not-permitted', counts: null });
  t.same(errorOf(await h.request(limited, 'POST', '/exports')), [403, 'export_not_permitted', null]);
  t.same(errorOf(await h.request(limited, 'GET', `/exports/${ready.id}/content`)), [403, 'export_not_permitted', null]);
  t.equal((await h.request(limited, 'GET', `/exports/${ready.id}`)).statusCode, 200, 'reading the export is open');

  const narrowed = await keyWith(h, key, { name: 'Narrow', scopes: READ, addressAllowlist: [a.address] });
  for (const [method, url] of [
    ['GET', '/exports/preview'],
    ['GET', '/exports'],
    ['POST', '/exports'],
    ['GET', `/exports/${ready.id}/content`],
  ] as const)
    t.same(errorOf(await h.request(narrowed, method, url)), [422, 'capability_unsupported', 'addressAllowlist']);

  const test = await keyWith(h, key, { name: 'Test', scopes: READ, mode: 'test' });
  t.same(errorOf(await h.request(test, 'POST', '/exports')), [403, 'beyond_caller_authority', null]);
  t.equal((await h.request(test, 'GET', '/exports')).json().total, 1, 'test keys read');
});

t.test('an OAuth app that is not elevated: 403 step_up_required to start or download', async (t) => {
  const oauth = h.system.oauth;
  const app = await oauth.register(ws.ownerUserId, 'Exporter', ['http://127.0.0.1:8765/cb']);
  const verifier = 'v'.repeat(50);
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const location = await oauth.approve({
    clientId: app.clientId,
    userId: ws.ownerUserId,
    workspaceId: ws.workspaceId,
    scopes: READ as any,
    addressAllowlist: null,
    domainAllowlist: null,
    redirectUri: 'http://127.0.0.1:8765/cb',
    state: undefined,
    codeChallenge: challenge,
    codeChallengeMethod: 'S256',
  });
  const code = new URL(location).searchParams.get('code')!;
  const answer = await h.app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: 'http://127.0.0.1:8765/cb',
      client_id: app.clientId,
      code_verifier: verifier,
    }).toString(),
  });
  t.equal(answer.statusCode, 200, answer.body);
  const token = answer.json().access_token;
  t.match((await h.request(token, 'GET', '/exports/preview')).json(), { allowed: true });
  t.same(errorOf(await h.request(token, 'POST', '/exports')), [403, 'step_up_required', null]);
  t.same(errorOf(await h.request(token, 'GET', `/exports/${ready.id}/content`)), [403, 'step_up_required', null]);
  t.equal((await h.request(token, 'GET', `/exports/${ready.id}`)).statusCode, 200);
});
