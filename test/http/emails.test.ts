import t from 'tap';
import {
  ATTACHMENTS_BYTES_MAX,
  ATTACHMENTS_MAX,
  HEADERS_MAX,
  RECIPIENTS_MAX,
  SUBJECT_MAX,
  TAGS_MAX,
} from '../../domain/emails/rules.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';

const blocks = (subject: string) => ({
  subject,
  document: {
    body: [
      { kind: 'Heading', text: 'Hi {{name}}', level: 2 },
      { kind: 'Text', text: 'Welcome aboard.' },
    ],
  },
  props: [{ name: 'name', type: 'string', default: 'there' }],
});

t.test('emails', async (t) => {
  const { h, setUp, keyWith } = await startSendingApp(t);
  const one = await setUp('example.com');
  const { ws } = one;
  const send = (body: object, key = ws.apiKey, headers: Record<string, string> = {}) =>
    h.request(key, 'POST', '/emails', body, headers);
  const base = { from: 'Jane <a@example.com>', to: 'x@example.org', subject: 'Hello', text: 'Body' };

  t.test('send: accepted, composed, stored; read back with recipients and history', async (t) => {
    const sig = await h.request(ws.apiKey, 'POST', '/signatures', {
      address: 'a@example.com',
      name: 'Work',
      html: '<p>Jane <b>Doe</b></p>',
    });
    t.equal(sig.statusCode, 201);
    const res = await send({
      ...base,
      to: ['x@example.org', 'Y <y@Example.ORG>'],
      cc: 'X@example.org',
      bcc: ['z@example.org'],
      replyTo: 'reply@example.com',
      html: '<p>Hello <b>there</b></p>',
      headers: { 'X-Campaign': 'spring' },
      tags: [{ name: 'kind', value: 'welcome' }],
    });
    t.equal(res.statusCode, 201, res.body);
    const email = res.json();
    t.match(email, {
      object: 'email',
      id: /^em_[0-9a-f]{24}$/,
      from: { address: 'a@example.com', name: 'Jane' },
      subject: 'Hello',
      status: 'queued',
      stream: 'transactional',
      source: 'api',
      mode: 'live',
      signatureId: sig.json().id,
      recipients: [
        { email: 'x@example.org', kind: 'to', status: 'queued', reason: null },
        { email: 'y@example.org', kind: 'to', status: 'queued' },
        { email: 'z@example.org', kind: 'bcc', status: 'queued' },
      ],
    });
    t.equal(email.recipients.length, 3, 'the cc repeat of x@ counts once');
    t.match(email.messageId, /^[0-9a-f-]{36}@example\.com$/);

    const read = await h.request(ws.apiKey, 'GET', `/emails/${email.id}`);
    t.equal(read.statusCode, 200);
    const { history, ...shown } = read.json();
    t.same(shown, email, 'the read model shows what the send answered');
    t.match(history, [{ type: 'EmailAccepted', recipient: null, detail: { status: 'queued' } }]);

    const mail = await storedMessage(h, email.id, ws.workspaceId);
    t.equal(mail.subject, 'Hello');
    t.equal(mail.messageId, `<${email.messageId}>`);
    t.equal(mail.from?.text, '"Jane" <a@example.com>');
    t.equal(mail.headers.get('x-campaign'), 'spring');
    t.equal(mail.headers.get('bcc'), undefined, 'bcc is envelope only');
    t.match(mail.text, /^Body\n\n-- \nJane Doe/);
    t.match(mail.html, /<p>Hello <b>there<\/b><\/p><div class="signature"><p>Jane <b>Doe<\/b><\/p><\/div>/);
    t.equal(mail.replyTo?.text, 'reply@example.com');
  });

  t.test('the sender: an enabled address of the workspace that the credential reaches', async (t) => {
    t.same(errorOf(await send({ ...base, from: 'nobody@example.com' })), [403, 'from_address_forbidden', 'from']);
    t.same(errorOf(await send({ ...base, from: 'a@elsewhere.test' })), [403, 'from_address_forbidden', 'from']);
    t.same(errorOf(await send({ ...base, from: 'off@example.com' })), [409, 'address_disabled', 'from']);
    t.same(errorOf(await send({ ...base, from: 'not an address' })), [422, 'invalid_email_address', 'from']);
    const onB = await keyWith(ws, { scopes: ['emails:send', 'emails:read'], addressAllowlist: ['b@example.com'] });
    t.same(errorOf(await send(base, onB)), [403, 'from_address_forbidden', 'from']);
    t.same(errorOf(await send({ ...base, from: 'off@example.com' }, onB)), [403, 'from_address_forbidden', 'from']);
    const fromB = await send({ ...base, from: 'b@example.com' }, onB);
    t.equal(fromB.statusCode, 201);
    const domainKey = await keyWith(ws, { scopes: ['emails:send'], domainAllowlist: ['example.com'] });
    t.equal((await send(base, domainKey)).statusCode, 201, 'a whole domain reaches its addresses');
    const reader = await keyWith(ws, { scopes: ['emails:read'] });
    t.same(errorOf(await send(base, reader)), [403, 'insufficient_scope', null]);

    // Reads narrow to the same set.
    const fromA = (await send(base)).json();
    t.same(errorOf(await h.request(onB, 'GET', `/emails/${fromA.id}`)), [404, 'resource_not_found', 'id']);
    t.equal((await h.request(onB, 'GET', `/emails/${fromB.json().id}`)).statusCode, 200);
    const listed = (await h.request(onB, 'GET', '/emails?limit=100')).json().data as { from: { address: string } }[];
    t.ok(listed.length > 0 && listed.every((e) => e.from.address === 'b@example.com'), 'only mail from b@');
  });

  t.test('an IDN domain: the From and recipients are sent and stored in punycode', async (t) => {
    const idn = await setUp('bücher.com');
    t.equal(idn.domain.domain, 'xn--bcher-kva.com');
    const res = await send(
      { ...base, from: 'Ana <a@Bücher.com>', to: ['x@bücher.com', 'y@example.org'] },
      idn.ws.apiKey,
    );
    t.equal(res.statusCode, 201, res.body);
    t.match(res.json(), {
      from: { address: 'a@xn--bcher-kva.com', name: 'Ana' },
      recipients: [{ email: 'x@xn--bcher-kva.com' }, { email: 'y@example.org' }],
    });
    const mail = await storedMessage(h, res.json().id, idn.ws.workspaceId);
    // mailparser shows an IDN in Unicode; the header as sent is ASCII.
    t.equal(mail.headerLines.find((l) => l.key === 'from')?.line, 'From: Ana <a@xn--bcher-kva.com>');
    t.match(mail.messageId, /@xn--bcher-kva\.com>$/);
  });

  t.test('recipients: the limit at the edge and one past; invalid addresses name their place', async (t) => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => `r${i}@example.org`);
    t.equal((await send({ ...base, to: many(RECIPIENTS_MAX - 1), bcc: 'last@example.org' })).statusCode, 201);
    t.same(errorOf(await send({ ...base, to: many(RECIPIENTS_MAX), bcc: 'last@example.org' })), [
      422,
      'too_many_recipients',
      'to',
    ]);
    t.same(errorOf(await send({ ...base, to: ['ok@example.org', 'bad'] })), [422, 'invalid_email_address', 'to.1']);
    t.same(errorOf(await send({ ...base, cc: ['bad@'] })), [422, 'invalid_email_address', 'cc.0']);
    t.same(errorOf(await send({ ...base, replyTo: 'nope' })), [422, 'invalid_email_address', 'replyTo.0']);
    t.same(errorOf(await send({ ...base, to: [] })), [422, 'invalid_parameter', 'to']);
  });

  t.test('headers, tags, content, attachments, schedule, translate', async (t) => {
    for (const name of ['From', 'message-id', 'DKIM-Signature', 'Content-Type'])
      t.same(errorOf(await send({ ...base, headers: { [name]: 'x' } })), [422, 'reserved_header', `headers.${name}`]);
    t.same(errorOf(await send({ ...base, headers: { 'X-A': 'a\r\nBcc: evil@example.org' } })), [
      422,
      'invalid_parameter',
      'headers.X-A',
    ]);
    t.same(errorOf(await send({ ...base, tags: [{ name: 'a b', value: 'x' }] })), [
      422,
      'invalid_parameter',
      'tags.0.name',
    ]);
    t.same(errorOf(await send({ ...base, subject: undefined })), [422, 'invalid_parameter', 'subject']);
    t.same(errorOf(await send({ ...base, text: undefined })), [422, 'invalid_parameter', 'text']);
    t.same(errorOf(await send({ ...base, translate: { to: 'de' } })), [409, 'translation_not_configured', 'translate']);
    t.same(errorOf(await send({ ...base, attachments: [{ filename: 'a.txt', content: '!!notbase64' }] })), [
      422,
      'invalid_parameter',
      'attachments.0.content',
    ]);
    t.same(errorOf(await send({ ...base, inReplyTo: 'no id' })), [422, 'invalid_parameter', 'inReplyTo']);

    const withFile = await send({
      ...base,
      attachments: [
        { filename: 'hello.txt', content: Buffer.from('hello file').toString('base64'), contentType: 'text/plain' },
      ],
    });
    t.equal(withFile.statusCode, 201);
    const mail = await storedMessage(h, withFile.json().id, ws.workspaceId);
    t.match(mail.attachments, [{ filename: 'hello.txt', contentType: 'text/plain' }]);
    t.equal(mail.attachments[0]!.content.toString(), 'hello file');

    const reply = await send({ ...base, inReplyTo: '<orig@example.org>' });
    t.equal(reply.statusCode, 201);
    const replied = await storedMessage(h, reply.json().id, ws.workspaceId);
    t.equal(replied.inReplyTo, '<orig@example.org>');
  });

  t.test('limits at the edge and one past: attachments, tags, headers, subject', async (t) => {
    const file = (i: number, bytes = 1) => ({
      filename: `f${i}.bin`,
      content: Buffer.alloc(bytes, i).toString('base64'),
    });
    const files = (n: number) => Array.from({ length: n }, (_, i) => file(i));
    t.equal((await send({ ...base, attachments: files(ATTACHMENTS_MAX) })).statusCode, 201);
    t.same(errorOf(await send({ ...base, attachments: files(ATTACHMENTS_MAX + 1) })), [
      422,
      'invalid_parameter',
      'attachments',
    ]);
    const half = ATTACHMENTS_BYTES_MAX / 2;
    t.equal((await send({ ...base, attachments: [file(0, half), file(1, half)] })).statusCode, 201, 'exactly 10 MiB');
    t.same(errorOf(await send({ ...base, attachments: [file(0, half), file(1, half + 1)] })), [
      422,
      'invalid_parameter',
      'attachments',
    ]);
    const tags = (n: number) => Array.from({ length: n }, (_, i) => ({ name: `t${i}`, value: 'v' }));
    t.equal((await send({ ...base, tags: tags(TAGS_MAX) })).statusCode, 201);
    t.same(errorOf(await send({ ...base, tags: tags(TAGS_MAX + 1) })), [422, 'invalid_parameter', 'tags']);
    const headers = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`X-H${i}`, 'v']));
    t.equal((await send({ ...base, headers: headers(HEADERS_MAX) })).statusCode, 201);
    t.same(errorOf(await send({ ...base, headers: headers(HEADERS_MAX + 1) })), [422, 'invalid_parameter', 'headers']);
    t.equal((await send({ ...base, subject: 's'.repeat(SUBJECT_MAX) })).statusCode, 201);
    t.same(errorOf(await send({ ...base, subject: 's'.repeat(SUBJECT_MAX + 1) })), [
      422,
      'invalid_parameter',
      'subject',
    ]);
  });

  t.test('signatures: by id, the reply default for replies, none of another address', async (t) => {
    const create = async (address: string, name: string, html: string, flags: object = {}) => {
      const res = await h.request(ws.apiKey, 'POST', '/signatures', { address, name, html, ...flags });
      t.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    await create('b@example.com', 'Main', '<p>Main sig</p>');
    const replies = await create('b@example.com', 'Replies', '<p>Reply sig</p>', { isReplyDefault: true });
    const short = await create('b@example.com', 'Short', '<p>Short sig</p>');
    const onA = (await h.request(ws.apiKey, 'GET', '/signatures?address=a@example.com')).json().data[0];
    const fromB = { ...base, from: 'b@example.com' };
    const textOf = async (body: object) => {
      const res = await send(body);
      t.equal(res.statusCode, 201, res.body);
      return { email: res.json(), text: (await storedMessage(h, res.json().id, ws.workspaceId)).text };
    };
    t.match((await textOf(fromB)).text, /-- \nMain sig\n?$/);
    const reply = await textOf({ ...fromB, inReplyTo: 'x@example.org' });
    t.match(reply.text, /-- \nReply sig\n?$/);
    t.equal(reply.email.signatureId, replies.id);
    t.match((await textOf({ ...fromB, signatureId: short.id })).text, /-- \nShort sig\n?$/);
    t.same(errorOf(await send({ ...fromB, signatureId: onA.id })), [422, 'invalid_parameter', 'signatureId']);
    // An address without signatures of its own takes its domain's catch-all's.
    t.equal((await h.request(ws.apiKey, 'PATCH', `/domains/${one.domain.id}`, { catchAll: true })).statusCode, 200);
    await create('*@example.com', 'Everyone', '<p>Catch-all sig</p>');
    t.equal((await h.request(ws.apiKey, 'POST', '/addresses', { address: 'c@example.com' })).statusCode, 201);
    t.match((await textOf({ ...base, from: 'c@example.com' })).text, /-- \nCatch-all sig\n?$/);
    t.match((await textOf(fromB)).text, /-- \nMain sig\n?$/, "the address's own first");
    t.same(errorOf(await send({ ...fromB, signatureId: 'sig_000000000000000000000000' })), [
      422,
      'invalid_parameter',
      'signatureId',
    ]);
  });

  t.test('templates: the published version, rendered with its props', async (t) => {
    const make = async (body: object) => {
      const res = await h.request(ws.apiKey, 'POST', '/templates', body);
      t.equal(res.statusCode, 201, res.body);
      return res.json();
    };
    const live = await make({ name: 'Welcome Mail', publish: true, ...blocks('Hello {{name}}') });
    const draft = await make({ name: 'Draft Mail', ...blocks('Draft') });
    const old = await make({ name: 'Old Mail', publish: true, ...blocks('Old') });
    t.equal((await h.request(ws.apiKey, 'POST', `/templates/${old.id}/archive`)).statusCode, 200);
    const tpl = { from: base.from, to: base.to };

    const res = await send({ ...tpl, template: { id: 'welcome-mail', props: { name: 'Ann' } } });
    t.equal(res.statusCode, 201, res.body);
    t.match(res.json(), { subject: 'Hello Ann', template: { id: live.id } });
    const mail = await storedMessage(h, res.json().id, ws.workspaceId);
    t.match(mail.html, /Hi Ann/);
    t.match(
      mail.html,
      /<div class="signature"><p>Jane <b>Doe<\/b><\/p><\/div><\/body>/,
      'the signature inside the body',
    );
    t.match(mail.text, /Hi Ann/);
    t.same(errorOf(await send({ ...tpl, template: { id: live.id, props: { nope: 1 } } })), [
      422,
      'unknown_template_prop',
      'template.props.nope',
    ]);
    t.same(errorOf(await send({ ...tpl, template: { id: draft.id } })), [422, 'template_not_published', 'template']);
    t.same(errorOf(await send({ ...tpl, template: { id: old.id } })), [422, 'template_archived', 'template']);
    t.same(errorOf(await send({ ...tpl, template: { id: 'no-such-template' } })), [
      422,
      'template_not_found',
      'template.id',
    ]);
    t.same(errorOf(await send({ ...tpl, text: 'x', template: { id: live.id } })), [
      422,
      'invalid_parameter',
      'template',
    ]);
  });

  t.test('suppressed recipients are dropped with their reason; all suppressed: failed', async (t) => {
    t.equal((await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'gone@example.org' })).statusCode, 201);
    const mixed = (await send({ ...base, to: ['Gone@example.org', 'open@example.org'] })).json();
    t.match(mixed, {
      status: 'queued',
      recipients: [
        { email: 'Gone@example.org', status: 'suppressed', reason: 'manual' },
        { email: 'open@example.org', status: 'queued', reason: null },
      ],
    });
    const all = await send({ ...base, to: 'gone@example.org' });
    t.equal(all.statusCode, 201);
    t.match(all.json(), { status: 'failed', recipients: [{ status: 'suppressed', reason: 'manual' }] });
    t.equal((await h.request(ws.apiKey, 'GET', `/emails/${all.json().id}`)).json().status, 'failed');
  });

  t.test('scheduled sends cancel before their time; others are not cancellable', async (t) => {
    const at = new Date(Date.now() + 3_600_000).toISOString();
    const scheduled = (await send({ ...base, scheduledAt: at })).json();
    t.match(scheduled, { status: 'scheduled', scheduledAt: at });
    const cancelled = await h.request(ws.apiKey, 'POST', `/emails/${scheduled.id}/cancel`);
    t.equal(cancelled.statusCode, 200);
    t.match(cancelled.json(), { status: 'cancelled', cancelledAt: String });
    t.equal((await h.request(ws.apiKey, 'POST', `/emails/${scheduled.id}/cancel`)).json().status, 'cancelled', 'again');
    const now = (await send(base)).json();
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/emails/${now.id}/cancel`)), [
      409,
      'email_not_cancellable',
      null,
    ]);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/emails/em_000000000000000000000000/cancel')), [
      404,
      'resource_not_found',
      'id',
    ]);
    t.same(errorOf(await send({ ...base, scheduledAt: '2026-01-01T00:00:00' })), [
      422,
      'invalid_parameter',
      'scheduledAt',
    ]);
    const history = (await h.request(ws.apiKey, 'GET', `/emails/${scheduled.id}`)).json().history;
    t.same(
      history.map((e: { type: string }) => e.type),
      ['EmailAccepted', 'EmailCancelled'],
    );
  });

  t.test(
    'Idempotency-Key: same body answers the stored answer; another body is refused; test keys apart',
    async (t) => {
      const key = { 'idempotency-key': 'send-once-1' };
      const first = await send(base, ws.apiKey, key);
      const again = await send(base, ws.apiKey, key);
      t.equal(again.statusCode, 201);
      t.equal(again.headers['idempotent-replayed'], 'true');
      t.equal(again.json().id, first.json().id);
      t.same(errorOf(await send({ ...base, subject: 'Other' }, ws.apiKey, key)), [
        422,
        'idempotency_key_reuse',
        'Idempotency-Key',
      ]);
      const testKey = await keyWith(ws, { scopes: ['emails:send', 'emails:read'], mode: 'test' });
      const inTest = await send(base, testKey, key);
      t.equal(inTest.statusCode, 201, 'the same key in test mode is another key');
      t.not(inTest.json().id, first.json().id);
      t.equal(inTest.json().mode, 'test');
      t.same(errorOf(await h.request(testKey, 'GET', `/emails/${first.json().id}`)), [404, 'resource_not_found', 'id']);
      t.same(errorOf(await h.request(ws.apiKey, 'GET', `/emails/${inTest.json().id}`)), [
        404,
        'resource_not_found',
        'id',
      ]);
    },
  );

  t.test('batch: each item on its own, in order; 1 to 100 items', async (t) => {
    const res = await h.request(ws.apiKey, 'POST', '/emails/batch', {
      emails: [base, { ...base, from: 'off@example.com' }, { ...base, to: 'bad' }, { ...base, nope: 1 }, base],
    });
    t.equal(res.statusCode, 200, res.body);
    const { data } = res.json();
    t.same(
      data.map(
        (d: {
          index: number;
          email: { status: string } | null;
          error: { code: string; param: string | null } | null;
        }) => [d.index, d.email?.status ?? null, d.error?.code ?? null, d.error?.param ?? null],
      ),
      [
        [0, 'queued', null, null],
        [1, null, 'address_disabled', 'from'],
        [2, null, 'invalid_email_address', 'to.0'],
        [3, null, 'unknown_parameter', 'nope'],
        [4, 'queued', null, null],
      ],
    );
    t.match(data[0].email, { source: 'batch' });
    t.equal((await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: Array(100).fill(base) })).statusCode, 200);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: Array(101).fill(base) })), [
      422,
      'too_many_items',
      'emails',
    ]);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: [] })), [
      422,
      'too_many_items',
      'emails',
    ]);

    // A batch is one request under its key: the same key and body answers the stored answer
    // (no second set of messages), another body is refused, a test key's keys are apart.
    const key = { 'idempotency-key': 'batch-once-1' };
    const batch = (body: object, apiKey = ws.apiKey) => h.request(apiKey, 'POST', '/emails/batch', body, key);
    const first = await batch({ emails: [base, base] });
    t.equal(first.statusCode, 200, first.body);
    const again = await batch({ emails: [base, base] });
    t.equal(again.headers['idempotent-replayed'], 'true');
    t.same(
      again.json().data.map((d: { email: { id: string } }) => d.email.id),
      first.json().data.map((d: { email: { id: string } }) => d.email.id),
    );
    t.same(errorOf(await batch({ emails: [base] })), [422, 'idempotency_key_reuse', 'Idempotency-Key']);
    const testKey = await keyWith(ws, { scopes: ['emails:send', 'emails:read'], mode: 'test' });
    const inTest = await batch({ emails: [base, base] }, testKey);
    t.equal(inTest.statusCode, 200, 'the same key in test mode is another key');
    t.match(inTest.json().data, [{ email: { mode: 'test' } }, { email: { mode: 'test' } }]);
  });

  t.test('list: newest first across pages with mail sent between; filters; a foreign workspace is 404', async (t) => {
    const other = await setUp('example.net');
    const mine = (
      await send({ ...base, from: 'a@example.net', tags: [{ name: 'run', value: 'p1' }] }, other.ws.apiKey)
    ).json();
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/emails/${mine.id}`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(ws.apiKey, 'POST', `/emails/${mine.id}/cancel`)), [404, 'resource_not_found', 'id']);
    const ids: string[] = [mine.id];
    for (let i = 0; i < 4; i++)
      ids.push(
        (await send({ ...base, from: 'a@example.net', tags: [{ name: 'run', value: 'p1' }] }, other.ws.apiKey)).json()
          .id,
      );
    const page1 = (await h.request(other.ws.apiKey, 'GET', '/emails?limit=2&tag=run:p1')).json();
    t.same(
      page1.data.map((e: { id: string }) => e.id),
      [ids[4], ids[3]],
    );
    t.equal(page1.hasMore, true);
    const later = (
      await send({ ...base, from: 'a@example.net', tags: [{ name: 'run', value: 'p1' }] }, other.ws.apiKey)
    ).json();
    const page2 = (
      await h.request(other.ws.apiKey, 'GET', `/emails?limit=2&tag=run:p1&cursor=${page1.nextCursor}`)
    ).json();
    t.same(
      page2.data.map((e: { id: string }) => e.id),
      [ids[2], ids[1]],
      'a row added between pages does not shift them',
    );
    const page3 = (
      await h.request(other.ws.apiKey, 'GET', `/emails?limit=2&tag=run:p1&cursor=${page2.nextCursor}`)
    ).json();
    t.same(
      page3.data.map((e: { id: string }) => e.id),
      [ids[0]],
    );
    t.equal(page3.hasMore, false);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/emails?limit=1&tag=run')).json().data[0].id, later.id);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/emails?tag=run:p2')).json().data.length, 0);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/emails?status=failed')).json().data.length, 0);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/emails?from=b@example.net')).json().data.length, 0);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/emails?from=A@example.net&limit=100')).json().data.length, 6);
    t.same(errorOf(await h.request(other.ws.apiKey, 'GET', '/emails?limit=101')), [422, 'invalid_parameter', 'limit']);
    t.same(errorOf(await h.request(other.ws.apiKey, 'GET', '/emails?cursor=nope')), [400, 'invalid_cursor', 'cursor']);
  });
});
