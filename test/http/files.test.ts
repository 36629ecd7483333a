import t from 'tap';
import { errorOf } from '../support/domains.ts';
import { storedMessage } from '../support/emails.ts';
import { startFilesApp } from '../support/files.ts';

/**
 * Files over real PostgreSQL: attachments of mail that arrived through the listener, uploads
 * (raw bodies through inject), downloads with safe headers, sending with a stored file.
 */
const { h, setUp, keyWith, arrive, upload } = await startFilesApp(t);
const { ws, domain } = await setUp('files.example.com');
const foreign = await setUp('foreign-files.example.com');
const TEN_MIB = 10 * 1024 * 1024;

t.test('attachments of received mail: listed, read, downloaded with safe headers', async (t) => {
  const thread = await arrive(ws.apiKey, 'a@files.example.com', {
    subject: 'Papers',
    attachments: [
      { filename: 'agenda.txt', content: 'items' },
      { filename: 'evil"\r\nX-Bad: 1 ünïcode.html', content: '<script>alert(1)</script>', contentType: 'text/html' },
    ],
  });
  const [agenda, evil] = thread.messages[0].attachments;
  t.match(agenda, { filename: 'agenda.txt', fileId: /^fil_[0-9a-f]{24}$/ });

  const list = await h.request(ws.apiKey, 'GET', `/files?threadId=${thread.id}`);
  t.equal(list.statusCode, 200, list.body);
  t.same(
    list
      .json()
      .data.map((f: { id: string }) => f.id)
      .sort(),
    [agenda.fileId, evil.fileId].sort(),
  );
  const one = await h.request(ws.apiKey, 'GET', `/files/${agenda.fileId}`);
  t.match(one.json(), {
    object: 'file',
    id: agenda.fileId,
    source: 'attachment',
    address: 'a@files.example.com',
    threadId: thread.id,
    messageId: thread.messages[0].id,
    filename: 'agenda.txt',
    contentType: 'text/plain',
    size: 5,
    inline: false,
  });

  const content = await h.request(ws.apiKey, 'GET', `/files/${agenda.fileId}/content`);
  t.equal(content.statusCode, 200);
  t.equal(content.body, 'items');
  t.equal(content.headers['content-type'], 'text/plain');
  t.equal(content.headers['content-disposition'], `attachment; filename="agenda.txt"; filename*=UTF-8''agenda.txt`);
  t.equal(content.headers['x-content-type-options'], 'nosniff');

  const html = await h.request(ws.apiKey, 'GET', `/files/${evil.fileId}/content`);
  t.equal(html.body, '<script>alert(1)</script>');
  t.equal(html.headers['content-type'], 'text/html');
  const disposition = String(html.headers['content-disposition']);
  t.match(disposition, /^attachment; filename="[\x20-\x7e]+"; filename\*=UTF-8''[A-Za-z0-9%._~-]+$/);
  t.notMatch(disposition, /[\r\n]/);
  t.match(html.headers['content-security-policy'], /sandbox/);

  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/files/${agenda.fileId}`)), [409, 'file_in_use', 'id']);
  // Deleted for good with its thread, the attachment goes too.
  await h.request(ws.apiKey, 'DELETE', `/threads/${thread.id}`);
  await h.request(ws.apiKey, 'DELETE', `/threads/${thread.id}`);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/files/${agenda.fileId}`)), [404, 'resource_not_found', 'id']);
});

t.test('upload: names, types, limits at the edge and one past, and every refusal', async (t) => {
  const res = await upload(
    ws.apiKey,
    'Notes ü.txt',
    'hello',
    '?address=a@files.example.com',
    'text/plain; charset=utf-8',
  );
  t.equal(res.statusCode, 201, res.body);
  t.match(res.json(), {
    object: 'file',
    id: /^fil_/,
    source: 'upload',
    address: 'a@files.example.com',
    filename: 'Notes ü.txt',
    contentType: 'text/plain',
    size: 5,
  });
  const byQuery = await upload(ws.apiKey, null, 'data', '?filename=plain.pdf', 'Application/PDF; name=x');
  t.match(byQuery.json(), { filename: 'plain.pdf', contentType: 'application/pdf', address: null });
  t.equal((await h.request(ws.apiKey, 'GET', `/files/${byQuery.json().id}/content`)).body, 'data');

  const edge = await upload(ws.apiKey, 'big.bin', Buffer.alloc(TEN_MIB, 1), '', 'application/octet-stream');
  t.equal(edge.statusCode, 201, edge.body);
  t.equal(edge.json().size, TEN_MIB);
  t.same(errorOf(await upload(ws.apiKey, 'big.bin', Buffer.alloc(TEN_MIB + 1, 1))), [413, 'upload_too_large', null]);

  t.same(errorOf(await upload(ws.apiKey, null, 'x')), [400, 'upload_no_name', 'filename']);
  t.same(errorOf(await upload(ws.apiKey, 'empty.txt', '')), [400, 'upload_empty', null]);
  t.same(errorOf(await upload(ws.apiKey, 'setup.EXE', 'harmless')), [400, 'upload_dangerous', 'filename']);
  t.same(errorOf(await upload(ws.apiKey, 'photo.jpg', Buffer.from('MZ\x90\x00rest'))), [
    400,
    'upload_dangerous',
    'filename',
  ]);
  t.same(errorOf(await upload(ws.apiKey, 'a/b.txt', 'x')), [422, 'invalid_parameter', 'filename']);
  t.same(errorOf(await upload(ws.apiKey, 'x'.repeat(256), 'x')), [422, 'invalid_parameter', 'filename']);
  t.equal((await upload(ws.apiKey, 'x'.repeat(255), 'x')).statusCode, 201);
  t.same(errorOf(await upload(ws.apiKey, 'a.txt', 'x', '?address=nobody@files.example.com')), [
    403,
    'upload_forbidden',
    'address',
  ]);
  t.same(errorOf(await upload(ws.apiKey, 'a.txt', 'x', '?address=a@foreign-files.example.com')), [
    403,
    'upload_forbidden',
    'address',
  ]);
  // A catch-all is a mailbox only while it is on, as for labels and rules.
  t.same(errorOf(await upload(ws.apiKey, 'c.txt', 'x', '?address=*@files.example.com')), [
    403,
    'upload_forbidden',
    'address',
  ]);
  const on = await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { catchAll: true });
  t.equal(on.statusCode, 200, on.body);
  t.equal((await upload(ws.apiKey, 'c.txt', 'x', '?address=*@files.example.com')).statusCode, 201);
  t.same(errorOf(await upload(ws.apiKey, 'a.txt', 'x', '?colour=red')), [422, 'unknown_parameter', 'colour']);

  const narrowed = await keyWith(ws, {
    scopes: ['files:read', 'files:write'],
    addressAllowlist: ['a@files.example.com'],
  });
  t.same(errorOf(await upload(narrowed, 'a.txt', 'x')), [403, 'upload_no_address', 'address']);
  t.same(errorOf(await upload(narrowed, 'a.txt', 'x', '?address=b@files.example.com')), [
    403,
    'upload_forbidden',
    'address',
  ]);
  t.equal((await upload(narrowed, 'a.txt', 'x', '?address=a@files.example.com')).statusCode, 201);
  const readOnly = await keyWith(ws, { scopes: ['files:read'] });
  t.same(errorOf(await upload(readOnly, 'a.txt', 'x')), [403, 'insufficient_scope', null]);
});

t.test('delete an upload; sending with a stored file', async (t) => {
  const file = (await upload(ws.apiKey, 'report.csv', 'a,b\n1,2\n', '?address=a@files.example.com', 'text/csv')).json();
  const sent = await h.request(ws.apiKey, 'POST', '/emails', {
    from: 'a@files.example.com',
    to: 'someone@example.org',
    subject: 'The report',
    text: 'Attached.',
    attachments: [
      { fileId: file.id },
      { fileId: file.id, filename: 'renamed.csv' },
      { filename: 'inline.txt', content: 'aGk=' },
    ],
  });
  t.equal(sent.statusCode, 201, sent.body);
  const parsed = await storedMessage(h, sent.json().id, ws.workspaceId);
  t.same(
    parsed.attachments.map((a) => [a.filename, a.contentType, a.content.toString()]),
    [
      ['report.csv', 'text/csv', 'a,b\n1,2\n'],
      ['renamed.csv', 'text/csv', 'a,b\n1,2\n'],
      ['inline.txt', 'text/plain', 'hi'],
    ],
  );

  const send = (key: string, attachments: object[]) =>
    h.request(key, 'POST', '/emails', {
      from: 'a@files.example.com',
      to: 'someone@example.org',
      subject: 'x',
      text: 'x',
      attachments,
    });
  t.same(errorOf(await send(ws.apiKey, [{ fileId: 'fil_000000000000000000000000' }])), [
    422,
    'invalid_parameter',
    'attachments.0.fileId',
  ]);
  const theirs = (await upload(foreign.ws.apiKey, 'theirs.txt', 'secret')).json();
  t.same(errorOf(await send(ws.apiKey, [{ filename: 'a.txt', content: 'aGk=' }, { fileId: theirs.id }])), [
    422,
    'invalid_parameter',
    'attachments.1.fileId',
  ]);
  t.same(errorOf(await send(ws.apiKey, [{ fileId: file.id, content: 'aGk=' }])), [
    422,
    'invalid_parameter',
    'attachments.0.content',
  ]);
  t.same(errorOf(await send(ws.apiKey, [{ content: 'aGk=' }])), [422, 'invalid_parameter', 'attachments.0.filename']);
  const big = (await upload(ws.apiKey, 'big.bin', Buffer.alloc(10 * 1024 * 1024, 2))).json();
  t.same(errorOf(await send(ws.apiKey, [{ fileId: big.id }, { filename: 'one.txt', content: 'aGk=' }])), [
    422,
    'invalid_parameter',
    'attachments',
  ]);
  // A key narrowed to one address attaches files of that mailbox only.
  const narrowed = await keyWith(ws, { scopes: ['emails:send'], domainAllowlist: ['files.example.com'] });
  const bOnly = await keyWith(ws, { scopes: ['emails:send'], addressAllowlist: ['b@files.example.com'] });
  const fromB = (key: string) =>
    h.request(key, 'POST', '/emails', {
      from: 'b@files.example.com',
      to: 'someone@example.org',
      subject: 'x',
      text: 'x',
      attachments: [{ fileId: file.id }],
    });
  t.equal((await fromB(narrowed)).statusCode, 201);
  t.same(errorOf(await fromB(bOnly)), [422, 'invalid_parameter', 'attachments.0.fileId']);

  const deleted = await h.request(ws.apiKey, 'DELETE', `/files/${file.id}`);
  t.same(deleted.json(), { object: 'file', id: file.id, deleted: true });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/files/${file.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/files/${file.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await send(ws.apiKey, [{ fileId: file.id }])), [422, 'invalid_parameter', 'attachments.0.fileId']);
});

t.test('paging with files added between pages', async (t) => {
  const address = 'b@files.example.com';
  const before: string[] = [];
  for (let i = 0; i < 5; i++)
    before.unshift((await upload(ws.apiKey, `p${i}.txt`, 'x', `?address=${address}`)).json().id);
  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const page: any = await h.request(
      ws.apiKey,
      'GET',
      `/files?address=${address}&source=upload&limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    t.equal(page.statusCode, 200, page.body);
    seen.push(...page.json().data.map((x: { id: string }) => x.id));
    cursor = page.json().nextCursor;
    if (pages++ === 0) await upload(ws.apiKey, 'late.txt', 'x', `?address=${address}`);
  } while (cursor);
  t.same(seen, before);
  t.equal(pages, 3);
  t.equal((await h.request(ws.apiKey, 'GET', '/files?limit=100')).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/files?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/files?cursor=forged')), [400, 'invalid_cursor', 'cursor']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/files?source=other')), [422, 'invalid_parameter', 'source']);
});

t.test("another workspace's files are 404; narrowed keys see their mailboxes; test keys; scopes", async (t) => {
  const theirs = (
    await upload(foreign.ws.apiKey, 'theirs.txt', 'secret', '?address=a@foreign-files.example.com')
  ).json();
  for (const [method, url] of [
    ['GET', `/files/${theirs.id}`],
    ['GET', `/files/${theirs.id}/content`],
    ['DELETE', `/files/${theirs.id}`],
  ] as const)
    t.same(errorOf(await h.request(ws.apiKey, method, url)), [404, 'resource_not_found', 'id']);
  t.notOk(
    (await h.request(ws.apiKey, 'GET', '/files?limit=100')).json().data.some((f: { id: string }) => f.id === theirs.id),
  );

  const onA = (await upload(ws.apiKey, 'a.txt', 'x', '?address=a@files.example.com')).json();
  const onB = (await upload(ws.apiKey, 'b.txt', 'x', '?address=b@files.example.com')).json();
  const whole = (await upload(ws.apiKey, 'w.txt', 'x')).json();
  const narrowed = await keyWith(ws, {
    scopes: ['files:read', 'files:write'],
    addressAllowlist: ['a@files.example.com'],
  });
  const list = (await h.request(narrowed, 'GET', '/files?limit=100')).json().data;
  t.ok(list.some((f: { id: string }) => f.id === onA.id));
  t.ok(list.every((f: { address: string }) => f.address === 'a@files.example.com'));
  for (const id of [onB.id, whole.id]) {
    t.same(errorOf(await h.request(narrowed, 'GET', `/files/${id}/content`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(narrowed, 'DELETE', `/files/${id}`)), [404, 'resource_not_found', 'id']);
  }
  t.equal((await h.request(narrowed, 'GET', `/files/${onA.id}/content`)).statusCode, 200);

  const test = await keyWith(ws, { scopes: ['files:read', 'files:write'], mode: 'test' });
  t.same(errorOf(await h.request(test, 'GET', `/files/${onA.id}`)), [404, 'resource_not_found', 'id']);
  const testFile = (await upload(test, 't.txt', 'x')).json();
  t.same(
    (await h.request(test, 'GET', '/files')).json().data.map((f: { id: string }) => f.id),
    [testFile.id],
  );
  const none = await keyWith(ws, { scopes: ['emails:read'] });
  t.same(errorOf(await h.request(none, 'GET', '/files')), [403, 'insufficient_scope', null]);
  t.same(errorOf(await h.request(none, 'GET', `/files/${onA.id}/content`)), [403, 'insufficient_scope', null]);
});
