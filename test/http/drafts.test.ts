import t from 'tap';
import { appendDecided } from '../../commands/execute.ts';
import { draftStream } from '../../domain/drafts/events.ts';
import { errorOf } from '../support/domains.ts';
import { storedMessage } from '../support/emails.ts';
import { startFilesApp } from '../support/files.ts';

/** Drafts over real PostgreSQL: written, edited, listed, deleted, and sent through `sendEmail`. */
const { h, setUp, keyWith, upload } = await startFilesApp(t);
const { ws } = await setUp('drafts.example.com');
const foreign = await setUp('foreign-drafts.example.com');

const create = (body: object, key = ws.apiKey) => h.request(key, 'POST', '/drafts', body);
/** What a file's stream recorded: a draft's own release shows, not only a delete finding the use stale. */
const fileHistory = async (fileId: string) =>
  (await h.system.store.readStream(`ws-${ws.workspaceId}.file-${fileId}`)).map((e) => e.type);

t.test('create, read, edit, send: the draft goes, the email is accepted with its file', async (t) => {
  const file = (await upload(ws.apiKey, 'plan.txt', 'the plan', '?address=a@drafts.example.com')).json();
  const res = await create({ from: 'Ann <a@drafts.example.com>', subject: 'Plan', attachments: [{ fileId: file.id }] });
  t.equal(res.statusCode, 201, res.body);
  const draft = res.json();
  t.match(draft, {
    object: 'draft',
    id: /^drf_[0-9a-f]{24}$/,
    from: 'Ann <a@drafts.example.com>',
    address: 'a@drafts.example.com',
    to: [],
    subject: 'Plan',
    text: null,
    attachments: [{ fileId: file.id, filename: 'plan.txt', contentType: 'text/plain', size: 8 }],
  });
  t.same((await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`)).json(), draft);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/files/${file.id}`)), [409, 'file_in_use', 'id']);

  // Missing recipients are the send's to refuse; the draft stays.
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`)), [422, 'invalid_parameter', 'to']);
  const edited = await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, {
    to: 'someone@example.org',
    text: 'See attached.',
    subject: null,
  });
  t.equal(edited.statusCode, 200, edited.body);
  t.match(edited.json(), { to: ['someone@example.org'], subject: null, text: 'See attached.' });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`)), [
    422,
    'invalid_parameter',
    'subject',
  ]);
  await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { subject: 'Plan' });

  const sent = await h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`);
  t.equal(sent.statusCode, 201, sent.body);
  t.match(sent.json(), { object: 'email', id: /^em_/, subject: 'Plan' });
  const parsed = await storedMessage(h, sent.json().id, ws.workspaceId);
  t.equal(parsed.text?.trim(), 'See attached.');
  t.same(
    parsed.attachments.map((a) => [a.filename, a.content.toString()]),
    [['plan.txt', 'the plan']],
  );
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`)), [404, 'resource_not_found', 'id']);
  // Sent, the draft no longer holds the file.
  t.same(await fileHistory(file.id), ['FileUploaded', 'FileUseReserved', 'FileUseReleased'], 'the send released it');
  t.equal((await h.request(ws.apiKey, 'DELETE', `/files/${file.id}`)).statusCode, 200);
});

t.test("a send's refusals apply to a draft; a draft's own checks", async (t) => {
  const off = await create({ from: 'off@drafts.example.com', to: 'x@example.org', subject: 's', text: 't' });
  t.equal(off.statusCode, 201, off.body);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/drafts/${off.json().id}/send`)), [
    409,
    'address_disabled',
    'from',
  ]);
  t.equal((await h.request(ws.apiKey, 'GET', `/drafts/${off.json().id}`)).statusCode, 200, 'a refused draft stays');

  t.same(errorOf(await create({ from: 'nobody@drafts.example.com' })), [403, 'from_address_forbidden', 'from']);
  t.same(errorOf(await create({ from: 'a@foreign-drafts.example.com' })), [403, 'from_address_forbidden', 'from']);
  t.same(errorOf(await create({ from: 'not an address' })), [422, 'invalid_email_address', 'from']);
  t.same(errorOf(await create({ to: 'x@example.org' })), [422, 'invalid_parameter', 'from']);
  t.same(errorOf(await create({ from: 'a@drafts.example.com', cc: ['ok@example.org', 'bad'] })), [
    422,
    'invalid_email_address',
    'cc.1',
  ]);
  const many = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.org`);
  t.equal((await create({ from: 'a@drafts.example.com', to: many(50) })).statusCode, 201);
  t.same(errorOf(await create({ from: 'a@drafts.example.com', to: many(51) })), [422, 'too_many_recipients', 'to']);
  t.equal((await create({ from: 'a@drafts.example.com', subject: 'x'.repeat(998) })).statusCode, 201);
  t.same(errorOf(await create({ from: 'a@drafts.example.com', subject: 'x'.repeat(999) })), [
    422,
    'invalid_parameter',
    'subject',
  ]);
  t.same(
    errorOf(await create({ from: 'a@drafts.example.com', attachments: [{ fileId: 'fil_000000000000000000000000' }] })),
    [422, 'invalid_parameter', 'attachments.0.fileId'],
  );
  t.same(errorOf(await create({ from: 'a@drafts.example.com', colour: 'red' })), [422, 'unknown_parameter', 'colour']);
});

t.test('delete releases files; paging with drafts added between pages', async (t) => {
  const file = (await upload(ws.apiKey, 'keep.txt', 'x')).json();
  const dropped = (await upload(ws.apiKey, 'dropped.txt', 'y')).json();
  const draft = (
    await create({ from: 'b@drafts.example.com', attachments: [{ fileId: file.id }, { fileId: dropped.id }] })
  ).json();
  const edited = await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { attachments: [{ fileId: file.id }] });
  t.equal(edited.statusCode, 200, edited.body);
  t.same(await fileHistory(dropped.id), ['FileUploaded', 'FileUseReserved', 'FileUseReleased'], 'the edit released it');
  t.same(await fileHistory(file.id), ['FileUploaded', 'FileUseReserved'], 'the kept one stays held');
  const gone = await h.request(ws.apiKey, 'DELETE', `/drafts/${draft.id}`);
  t.same(gone.json(), { object: 'draft', id: draft.id, deleted: true });
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/drafts/${draft.id}`)), [404, 'resource_not_found', 'id']);
  t.same(await fileHistory(file.id), ['FileUploaded', 'FileUseReserved', 'FileUseReleased'], 'the delete released it');
  t.equal((await h.request(ws.apiKey, 'DELETE', `/files/${file.id}`)).statusCode, 200);

  const before: string[] = [];
  for (let i = 0; i < 5; i++)
    before.unshift((await create({ from: 'b@drafts.example.com', subject: `p${i}` })).json().id);
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: any = await h.request(
      ws.apiKey,
      'GET',
      `/drafts?address=b@drafts.example.com&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    t.equal(page.statusCode, 200, page.body);
    seen.push(...page.json().data.map((x: { id: string }) => x.id));
    cursor = page.json().nextCursor;
    if (pages++ === 0) await create({ from: 'b@drafts.example.com', subject: 'late' });
  } while (cursor);
  t.same(seen, before);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/drafts?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/drafts?cursor=forged')), [400, 'invalid_cursor', 'cursor']);
});

t.test("another workspace's drafts are 404; narrowed keys; scopes", async (t) => {
  const theirs = (await create({ from: 'a@foreign-drafts.example.com' }, foreign.ws.apiKey)).json();
  for (const [method, url] of [
    ['GET', `/drafts/${theirs.id}`],
    ['PATCH', `/drafts/${theirs.id}`],
    ['DELETE', `/drafts/${theirs.id}`],
    ['POST', `/drafts/${theirs.id}/send`],
  ] as const)
    t.same(errorOf(await h.request(ws.apiKey, method, url, method === 'PATCH' ? { subject: 'x' } : undefined)), [
      404,
      'resource_not_found',
      'id',
    ]);
  const onB = (await create({ from: 'b@drafts.example.com' })).json();
  const narrowed = await keyWith(ws, {
    scopes: ['drafts:read', 'drafts:write', 'emails:send'],
    addressAllowlist: ['a@drafts.example.com'],
  });
  t.same(errorOf(await h.request(narrowed, 'GET', `/drafts/${onB.id}`)), [404, 'resource_not_found', 'id']);
  const onA = (await create({ from: 'a@drafts.example.com' })).json();
  const seen = (await h.request(narrowed, 'GET', '/drafts?limit=100')).json().data;
  t.ok(
    seen.some((d: { id: string }) => d.id === onA.id),
    'the narrowed key lists a draft of the mailbox it reaches',
  );
  t.ok(
    seen.every((d: { address: string }) => d.address === 'a@drafts.example.com'),
    'and only drafts of that mailbox',
  );
  t.notOk(
    seen.some((d: { id: string }) => d.id === onB.id),
    'not the draft of the mailbox it does not reach',
  );
  t.same(errorOf(await create({ from: 'b@drafts.example.com' }, narrowed)), [403, 'from_address_forbidden', 'from']);
  const mine = (await create({ from: 'a@drafts.example.com' }, narrowed)).json();
  t.same(errorOf(await h.request(narrowed, 'PATCH', `/drafts/${mine.id}`, { from: 'b@drafts.example.com' })), [
    403,
    'from_address_forbidden',
    'from',
  ]);
  const noSend = await keyWith(ws, { scopes: ['drafts:read', 'drafts:write'] });
  t.same(errorOf(await h.request(noSend, 'POST', `/drafts/${onB.id}/send`)), [403, 'insufficient_scope', null]);
  const readOnly = await keyWith(ws, { scopes: ['drafts:read'] });
  t.same(errorOf(await create({ from: 'a@drafts.example.com' }, readOnly)), [403, 'insufficient_scope', null]);
});

t.test('an edit whose merged draft is refused leaves the draft as it was', async (t) => {
  const many = (n: number, at: string) => Array.from({ length: n }, (_, i) => `m${i}@${at}`);
  const draft = (await create({ from: 'a@drafts.example.com', to: many(30, 'example.org'), subject: 'Merge' })).json();
  const before = (await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`)).json();

  // Each part alone is within 50; the draft they make together is not.
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { cc: many(21, 'example.net') })), [
    422,
    'too_many_recipients',
    'to',
  ]);
  t.same(
    errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { subject: 'Merged', inReplyTo: 'no id' })),
    [422, 'invalid_parameter', 'inReplyTo'],
  );
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { text: 'x'.repeat(1_000_001) })), [
    422,
    'invalid_parameter',
    'text',
  ]);
  t.same((await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`)).json(), before, 'nothing of a refused edit stays');

  // The count is of distinct recipients across the three lists, as a send counts them.
  const same = await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { cc: many(21, 'example.org') });
  t.equal(same.statusCode, 200, 'the same recipients again in cc');
  t.equal(same.json().cc.length, 21);
});

t.test('from: only a registered address of the workspace the caller reaches', async (t) => {
  t.same(errorOf(await create({ from: '*@drafts.example.com' })), [403, 'from_address_forbidden', 'from']);
  const gone = await h.request(ws.apiKey, 'POST', '/addresses', { address: 'gone@drafts.example.com' });
  t.equal(gone.statusCode, 201, 'an address to delete');
  const kept = (await create({ from: 'gone@drafts.example.com', subject: 'Before' })).json();
  t.equal((await h.request(ws.apiKey, 'DELETE', `/addresses/${gone.json().id}`)).statusCode, 200);
  t.same(errorOf(await create({ from: 'Gone <gone@drafts.example.com>' })), [403, 'from_address_forbidden', 'from']);

  const draft = (await create({ from: 'a@drafts.example.com', subject: 'Mine' })).json();
  t.same(
    errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { from: 'a@foreign-drafts.example.com' })),
    [403, 'from_address_forbidden', 'from'],
  );
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { from: 'gone@drafts.example.com' })), [
    403,
    'from_address_forbidden',
    'from',
  ]);
  t.same((await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`)).json(), draft, 'a refused edit changes nothing');
  // A draft whose address went is kept, but cannot be edited while it names that address.
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${kept.id}`, { subject: 'After' })), [
    403,
    'from_address_forbidden',
    'from',
  ]);

  const otherDomain = await keyWith(ws, {
    scopes: ['drafts:read', 'drafts:write'],
    domainAllowlist: ['foreign-drafts.example.com'],
  });
  t.same(errorOf(await create({ from: 'a@foreign-drafts.example.com' }, otherDomain)), [
    403,
    'from_address_forbidden',
    'from',
  ]);
  t.same(errorOf(await create({ from: 'a@drafts.example.com' }, otherDomain)), [403, 'from_address_forbidden', 'from']);
  const wholeDomain = await keyWith(ws, {
    scopes: ['drafts:read', 'drafts:write'],
    domainAllowlist: ['drafts.example.com'],
  });
  t.equal(
    (await create({ from: 'b@drafts.example.com' }, wholeDomain)).statusCode,
    201,
    'a domain held whole reaches its addresses',
  );
  t.same(errorOf(await create({ from: '*@drafts.example.com' }, wholeDomain)), [403, 'from_address_forbidden', 'from']);
});

t.test('sizes: text, html, attachments and references at the limit and one past', async (t) => {
  const from = 'a@drafts.example.com';
  for (const part of ['text', 'html'] as const) {
    const at = await create({ from, [part]: 'x'.repeat(1_000_000) });
    t.equal(at.statusCode, 201, `${part} of 1,000,000 characters`);
    t.equal(at.json()[part].length, 1_000_000);
    t.same(errorOf(await create({ from, [part]: 'x'.repeat(1_000_001) })), [422, 'invalid_parameter', part]);
  }

  const files: { fileId: string }[] = [];
  for (let i = 0; i < 21; i++) files.push({ fileId: (await upload(ws.apiKey, `f${i}.txt`, `file ${i}`)).json().id });
  const twenty = await create({ from, attachments: files.slice(0, 20) });
  t.equal(twenty.statusCode, 201, '20 attachments');
  t.equal(twenty.json().attachments.length, 20);
  t.same(errorOf(await create({ from, attachments: files })), [422, 'invalid_parameter', 'attachments']);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/drafts/${twenty.json().id}`, { attachments: files })), [
    422,
    'invalid_parameter',
    'attachments',
  ]);
  t.equal((await h.request(ws.apiKey, 'GET', `/drafts/${twenty.json().id}`)).json().attachments.length, 20);
  // The 21st file was never named: nothing holds it.
  t.equal((await h.request(ws.apiKey, 'DELETE', `/files/${files[20]!.fileId}`)).statusCode, 200);

  const refs = (n: number) => Array.from({ length: n }, (_, i) => `<r${i}@drafts.example.com>`);
  const hundred = await create({ from, references: refs(100) });
  t.equal(hundred.statusCode, 201, '100 references');
  t.equal(hundred.json().references.length, 100);
  t.same(errorOf(await create({ from, references: refs(101) })), [422, 'invalid_parameter', 'references']);
  t.same(errorOf(await create({ from, references: [...refs(2), 'not an id'] })), [
    422,
    'invalid_parameter',
    'references.2',
  ]);
});

t.test('two edits at once: the one stored last releases the file the other named', async (t) => {
  const draft = (await create({ from: 'b@drafts.example.com' })).json();
  const [x, y] = [(await upload(ws.apiKey, 'x.txt', 'x')).json(), (await upload(ws.apiKey, 'y.txt', 'y')).json()];
  const edits = await Promise.all(
    [x, y].map((f) => h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { attachments: [{ fileId: f.id }] })),
  );
  t.same(
    edits.map((e) => e.statusCode),
    [200, 200],
  );
  const named = (await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`))
    .json()
    .attachments.map((a: { fileId: string }) => a.fileId);
  t.equal(named.length, 1);
  for (const f of [x, y])
    t.equal(
      (await fileHistory(f.id)).at(-1),
      named.includes(f.id) ? 'FileUseReserved' : 'FileUseReleased',
      named.includes(f.id) ? 'the file the draft names stays held' : 'the file it no longer names is released',
    );
});

t.test('an edit racing the delete: once deleted, the draft holds no file', async (t) => {
  for (let round = 0; round < 5; round++) {
    const [x, y] = [(await upload(ws.apiKey, 'x.txt', 'x')).json(), (await upload(ws.apiKey, 'y.txt', 'y')).json()];
    const draft = (await create({ from: 'a@drafts.example.com', attachments: [{ fileId: x.id }] })).json();
    const [deleted, edited] = await Promise.all([
      h.request(ws.apiKey, 'DELETE', `/drafts/${draft.id}`),
      h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { attachments: [{ fileId: x.id }, { fileId: y.id }] }),
    ]);
    t.equal(deleted.statusCode, 200, deleted.body);
    t.ok([200, 404].includes(edited.statusCode), edited.body);
    for (const f of [x, y]) {
      const held = (await fileHistory(f.id)).filter((e) => e !== 'FileUploaded');
      t.equal(held.at(-1) ?? 'FileUseReleased', 'FileUseReleased', `round ${round}: ${f.filename} is held by no draft`);
    }
  }
});

t.test('an edit racing the send: sent with the edit, or refused; once sent, the draft holds no file', async (t) => {
  for (let round = 0; round < 3; round++) {
    const [x, y] = [(await upload(ws.apiKey, 'x.txt', 'x')).json(), (await upload(ws.apiKey, 'y.txt', 'y')).json()];
    const made = await create({
      from: 'a@drafts.example.com',
      to: 'someone@example.org',
      subject: 'Race',
      text: 'x',
      attachments: [{ fileId: x.id }],
    });
    const draft = made.json();
    const [sent, edited] = await Promise.all([
      h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`),
      h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, {
        subject: 'Edited',
        attachments: [{ fileId: x.id }, { fileId: y.id }],
      }),
    ]);
    t.equal(sent.statusCode, 201, sent.body);
    // Before the send took the draft, held by it (409 draft_sending), or after it was gone.
    t.ok([200, 404, 409].includes(edited.statusCode), edited.body);
    const email = (await h.request(ws.apiKey, 'GET', `/emails/${sent.json().id}`)).json();
    if (edited.statusCode === 200) t.equal(email.subject, 'Edited', `round ${round}: the edit answered 200 was sent`);
    else t.equal(email.subject, 'Race', `round ${round}: the refused edit was not sent`);
    for (const f of [x, y]) {
      const held = (await fileHistory(f.id)).filter((e) => e !== 'FileUploaded');
      t.equal(held.at(-1) ?? 'FileUseReleased', 'FileUseReleased', `round ${round}: ${f.filename} is held by no draft`);
    }
  }
});

t.test(
  'a send in progress holds the draft: edits and deletes 409 draft_sending; a refused send hands it back',
  async (t) => {
    const draft = (await create({ from: 'a@drafts.example.com', to: 'someone@example.org', subject: 'Held' })).json();
    const stream = draftStream(ws.workspaceId, draft.id);
    const recorded = await h.system.store.readStream(stream);
    // The hold as sendDraft appends it before it hands the draft on.
    await appendDecided(
      h.system.commands,
      { workspaceId: ws.workspaceId, kind: 'system', id: null },
      stream,
      [{ type: 'DraftSending', data: { draftId: draft.id, emailId: 'em_held', at: new Date().toISOString() } }],
      recorded.length - 1,
    );
    const edit = await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, { subject: 'Changed' });
    t.same([edit.statusCode, edit.json().error.code, edit.json().error.param], [409, 'draft_sending', 'id']);
    const removal = await h.request(ws.apiKey, 'DELETE', `/drafts/${draft.id}`);
    t.same([removal.statusCode, removal.json().error.code], [409, 'draft_sending']);
    t.equal((await h.request(ws.apiKey, 'GET', `/drafts/${draft.id}`)).json().subject, 'Held', 'nothing changed');

    // A send refused by its checks (no body) takes the hold over and hands the draft back.
    const refused = await h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`);
    t.equal(refused.statusCode, 422, refused.body);
    const edited = await h.request(ws.apiKey, 'PATCH', `/drafts/${draft.id}`, {
      subject: 'Changed',
      text: 'Now a body',
    });
    t.equal(edited.statusCode, 200, edited.body);
    t.equal((await h.request(ws.apiKey, 'POST', `/drafts/${draft.id}/send`)).statusCode, 201);
  },
);
