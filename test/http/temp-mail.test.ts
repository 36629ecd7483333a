import nodemailer from 'nodemailer';
import t from 'tap';
import { TempInboxRetention } from '../../processes/temp-inboxes/retention.ts';
import { startSubmission } from '../../system.ts';
import { startTestApp } from '../support/app.ts';
import { compose, startTestInbound } from '../support/inbound.ts';

/**
 * Disposable inboxes over HTTP into the real PostgreSQL, with mail handed to our MX on loopback
 * by another server's MTA (nodemailer).
 */
const DOMAIN = 'disposable.example.net';
const h = await startTestApp(t, { tempMail: { domain: DOMAIN } });
const mx = await startTestInbound(t, h.system);

const create = (remoteAddress = '192.0.2.1', payload?: unknown) =>
  h.app.inject({
    method: 'POST',
    url: '/temp-mail/inboxes',
    remoteAddress,
    ...(payload === undefined ? {} : { payload: payload as object }),
  });

// Through `request`, so every error answer is checked against the OpenAPI document.
const read = (token: string | null, url: string) => h.request(token, 'GET', url);

const code = async (promise: Promise<unknown>) =>
  promise.then(
    () => 250,
    (error: { responseCode?: number }) => error.responseCode,
  );

t.test('an inbox is made without a key; mail to it arrives through the MX and is read with its token', async (t) => {
  const res = await create('192.0.2.10');
  t.equal(res.statusCode, 201, res.body);
  t.equal(res.headers['cache-control'], 'no-store');
  const inbox = res.json();
  t.match(inbox, { object: 'temp_inbox', id: /^tin_[0-9a-f]{24}$/, token: /^wms_tmp_/ });
  t.equal(inbox.address, `${inbox.id.slice(4)}@${DOMAIN}`);
  const lifetime = Date.parse(inbox.expiresAt) - Date.parse(inbox.createdAt);
  t.equal(lifetime, 60 * 60 * 1000, 'an hour');

  const { rows } = await h.system.database.pool.query('SELECT data::text FROM es_events WHERE stream_id = $1', [
    `service.temp-inbox-${inbox.id}`,
  ]);
  t.notOk(rows[0].data.includes(inbox.token.slice(8)), 'the token itself is stored nowhere, only its hash');

  const raw = await compose({
    to: inbox.address,
    subject: 'Your code is 123456',
    text: 'Enter 123456 to confirm.\r\n',
    attachments: [{ filename: 'a.txt', content: 'hello\n', contentType: 'text/plain' }],
    messageId: '<code-1@outside.test>',
  });
  const info = await mx.send({ from: 'noreply@outside.test', to: [inbox.address] }, raw);
  t.same(info.accepted, [inbox.address]);
  // The same delivery again (a sender that lost our 250) keeps one message.
  await mx.send({ from: 'noreply@outside.test', to: [inbox.address] }, raw);

  const view = await read(inbox.token, `/temp-mail/inboxes/${inbox.id}`);
  t.equal(view.statusCode, 200);
  t.same(view.json(), {
    object: 'temp_inbox',
    id: inbox.id,
    address: inbox.address,
    createdAt: inbox.createdAt,
    expiresAt: inbox.expiresAt,
  });
  t.notOk('token' in view.json(), 'the token is shown once');

  const list = await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages`);
  t.equal(list.statusCode, 200, list.body);
  const page = list.json();
  t.match(page, { object: 'list', hasMore: false, nextCursor: null });
  t.equal(page.data.length, 1);
  const [message] = page.data;
  t.match(message, {
    object: 'temp_inbox_message',
    id: /^tim_/,
    inboxId: inbox.id,
    mailFrom: 'noreply@outside.test',
    subject: 'Your code is 123456',
    from: { address: 'olga@outside.test' },
    snippet: 'Enter 123456 to confirm.',
    attachments: [{ filename: 'a.txt', contentType: 'text/plain', size: 6 }],
  });

  const one = await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages/${message.id}`);
  t.equal(one.statusCode, 200);
  t.same(one.json(), message);
  const rawAnswer = await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages/${message.id}/raw`);
  t.equal(rawAnswer.statusCode, 200);
  t.equal(rawAnswer.headers['content-type'], 'message/rfc822');
  t.ok(rawAnswer.body.includes('Enter 123456 to confirm.'), 'the whole message, as it arrived');
  t.ok(rawAnswer.body.startsWith('Return-Path: <noreply@outside.test>'), 'with our trace lines');
  t.same(mx.errors, []);
});

t.test('pages of messages, newest first, with cursors bound to the inbox', async (t) => {
  const inbox = (await create('192.0.2.11')).json();
  for (const n of [1, 2, 3])
    await mx.send(
      { from: 'a@outside.test', to: [inbox.address] },
      await compose({ to: inbox.address, subject: `n${n}` }),
    );
  const first = (await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages?limit=2`)).json();
  t.same(
    first.data.map((m: { subject: string }) => m.subject),
    ['n3', 'n2'],
  );
  t.equal(first.hasMore, true);
  const second = (
    await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages?limit=2&cursor=${first.nextCursor}`)
  ).json();
  t.same(
    second.data.map((m: { subject: string }) => m.subject),
    ['n1'],
  );
  t.equal(second.nextCursor, null);
  const other = (await create('192.0.2.12')).json();
  const foreign = await read(other.token, `/temp-mail/inboxes/${other.id}/messages?cursor=${first.nextCursor}`);
  t.equal(foreign.statusCode, 400);
  t.equal(foreign.json().error.code, 'invalid_cursor');
  const bad = await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages?limit=101`);
  t.equal(bad.statusCode, 422);
  t.match(bad.json().error, { code: 'invalid_parameter', param: 'limit' });
  const unknown = await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages?sort=old`);
  t.match(unknown.json().error, { code: 'unknown_parameter', param: 'sort' });
});

t.test('no token is 401; a wrong, foreign or key token, or an unknown inbox, is one 404', async (t) => {
  const mine = (await create('192.0.2.13')).json();
  const theirs = (await create('192.0.2.14')).json();
  await mx.send({ from: 'a@outside.test', to: [mine.address] }, await compose({ to: mine.address }));
  const [message] = (await read(mine.token, `/temp-mail/inboxes/${mine.id}/messages`)).json().data;
  const none = await read(null, `/temp-mail/inboxes/${mine.id}/messages`);
  t.equal(none.statusCode, 401);
  t.equal(none.json().error.code, 'missing_api_key');
  const ws = await h.workspace();
  for (const [token, url] of [
    [theirs.token, `/temp-mail/inboxes/${mine.id}`],
    [theirs.token, `/temp-mail/inboxes/${mine.id}/messages`],
    [theirs.token, `/temp-mail/inboxes/${mine.id}/messages/${message.id}`],
    [theirs.token, `/temp-mail/inboxes/${mine.id}/messages/${message.id}/raw`],
    [mine.token, `/temp-mail/inboxes/${theirs.id}/messages/${message.id}`],
    [`${mine.token.slice(0, -2)}xx`, `/temp-mail/inboxes/${mine.id}/messages`],
    [ws.apiKey, `/temp-mail/inboxes/${mine.id}/messages`],
    [mine.token, `/temp-mail/inboxes/tin_${'0'.repeat(24)}`],
    [mine.token, '/temp-mail/inboxes/nonsense/messages'],
    [mine.token, `/temp-mail/inboxes/${mine.id}/messages/tim_${'0'.repeat(24)}`],
  ]) {
    const res = await read(token!, url!);
    t.equal(res.statusCode, 404, url);
    t.equal(res.json().error.code, 'resource_not_found');
  }
});

t.test('one message to two inboxes is kept in each; a +tag reaches the inbox', async (t) => {
  const [one, two] = [(await create('192.0.2.20')).json(), (await create('192.0.2.21')).json()];
  const tagged = one.address.replace('@', '+signup@');
  const raw = await compose({ to: [tagged, two.address], subject: 'Both' });
  const info = await mx.send({ from: 'a@outside.test', to: [tagged, two.address] }, raw);
  t.same(info.accepted, [tagged, two.address]);
  for (const inbox of [one, two]) {
    const { data } = (await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages`)).json();
    t.same(
      data.map((m: { subject: string }) => m.subject),
      ['Both'],
    );
  }
});

t.test('mail to an address of the disposable domain that is no live inbox is refused at RCPT', async (t) => {
  const raw = await compose({ to: `nobody@${DOMAIN}` });
  t.equal(await code(mx.send({ from: 'a@outside.test', to: [`nobody@${DOMAIN}`] }, raw)), 550);
  t.equal(await code(mx.send({ from: 'a@outside.test', to: [`${'0'.repeat(24)}@${DOMAIN}`] }, raw)), 550);
});

t.test('the create takes no body fields', async (t) => {
  const res = await create('192.0.2.15', { lifetime: 5 });
  t.equal(res.statusCode, 422);
  t.match(res.json().error, { code: 'unknown_parameter', param: 'lifetime' });
});

t.test('10 creates per 10 minutes per IPv4 /24, exactly, even all at once', async (t) => {
  const results = await Promise.all(Array.from({ length: 12 }, (_, i) => create(`198.51.100.${i + 1}`)));
  const statuses = results.map((r) => r.statusCode).sort();
  t.same(statuses, [...Array(10).fill(201), 429, 429]);
  const refused = results.find((r) => r.statusCode === 429)!;
  t.match(refused.json().error, { type: 'rate_limit_error', code: 'temp_inbox_rate_limited' });
  const wait = Number(refused.headers['retry-after']);
  t.ok(wait > 590 && wait <= 600, `Retry-After ${wait}`);
  t.equal((await create('198.51.100.250')).statusCode, 429, 'the whole /24');
  t.equal((await create('::ffff:198.51.100.9')).statusCode, 429, 'written as mapped IPv6 too');
  t.equal((await create('198.51.101.1')).statusCode, 201, 'the next /24 has its own');
});

t.test('10 creates per 10 minutes per IPv6 /56: the 10th passes, the 11th is refused', async (t) => {
  for (let i = 0; i < 10; i++) {
    const res = await create(`2001:db8:1:23${i.toString(16).padStart(2, '0')}::${i + 1}`);
    t.equal(res.statusCode, 201, `create ${i + 1}`);
  }
  const eleventh = await create('2001:db8:1:23ff:ffff::1');
  t.equal(eleventh.statusCode, 429);
  t.equal(eleventh.json().error.code, 'temp_inbox_rate_limited');
  t.ok(Number(eleventh.headers['retry-after']) > 0);
  t.equal((await create('2001:db8:1:2400::1')).statusCode, 201, 'the next /56 has its own');
  t.equal((await create('2001:db8:2:2300::1')).statusCode, 201);
});

t.test('nothing can send as a disposable inbox', async (t) => {
  const inbox = (await create('192.0.2.16')).json();
  const ws = await h.workspace();
  const send = await h.request(ws.apiKey, 'POST', '/emails', {
    from: inbox.address,
    to: ['someone@example.org'],
    subject: 'Hi',
    text: 'Hi',
  });
  t.equal(send.statusCode, 403, send.body);
  t.equal(send.json().error.code, 'from_address_forbidden');
  const asToken = await h.request(inbox.token, 'POST', '/emails', {
    from: inbox.address,
    to: ['someone@example.org'],
    subject: 'Hi',
    text: 'Hi',
  });
  t.equal(asToken.statusCode, 401, 'the access token is no credential of the api');
  t.equal(asToken.json().error.code, 'invalid_api_key');
  // SMTP submission: the address with its token is no login (logins are workspace addresses').
  const submission = await startSubmission(h.system, {
    port: 0,
    host: '127.0.0.1',
    hostname: 'mail.example.net',
    maxMessageBytes: 64 * 1024,
  });
  t.teardown(() => submission.close());
  const login = nodemailer.createTransport({
    host: '127.0.0.1',
    port: submission.port,
    auth: { user: inbox.address, pass: inbox.token },
    tls: { rejectUnauthorized: false },
  });
  const refused = await login.sendMail({ from: inbox.address, to: 'someone@example.org', text: 'Hi' }).then(
    () => null,
    (error: { responseCode?: number }) => error.responseCode,
  );
  t.equal(refused, 535, 'no SMTP login');
  for (const domain of [DOMAIN, `sub.${DOMAIN}`, DOMAIN.toUpperCase()]) {
    const res = await h.request(ws.apiKey, 'POST', '/domains', { domain });
    t.equal(res.statusCode, 409, `${domain}: no workspace may hold the disposable domain`);
    t.equal(res.json().error.code, 'domain_in_use');
  }
});

t.test('at expiry the inbox and its mail are deleted, events included', async (t) => {
  const inbox = (await create('192.0.2.17')).json();
  await mx.send({ from: 'a@outside.test', to: [inbox.address] }, await compose({ to: inbox.address }));
  const pool = h.system.database.pool;
  const retention = new TempInboxRetention(pool, h.system.commands, { everyMs: 60_000, purgeStore: true });
  t.same(await retention.purge(new Date()), { expired: 0, streams: 0, storedEvents: 0 }, 'nothing before its time');
  const result = await retention.purge(new Date(Date.parse(inbox.expiresAt) + 1));
  t.ok(result.expired >= 1);
  t.ok(result.streams >= 1);
  t.equal((await read(inbox.token, `/temp-mail/inboxes/${inbox.id}/messages`)).statusCode, 404);
  const count = async (sql: string, value: string) => Number((await pool.query(sql, [value])).rows[0].n);
  t.equal(await count('SELECT count(*) AS n FROM temp_inboxes WHERE id = $1', inbox.id), 0);
  t.equal(await count('SELECT count(*) AS n FROM temp_inbox_messages WHERE inbox_id = $1', inbox.id), 0);
  t.equal(await count('SELECT count(*) AS n FROM es_events WHERE stream_id = $1', `service.temp-inbox-${inbox.id}`), 0);
  t.equal(
    await count(
      "SELECT count(*) AS n FROM es_events WHERE stream_id LIKE 'service.temp-inbox-network-%' AND $1 = $1",
      '',
    ),
    0,
    'nor the networks that asked, once idle past the window',
  );
  const late = await code(
    mx.send({ from: 'a@outside.test', to: [inbox.address] }, await compose({ to: inbox.address })),
  );
  t.equal(late, 550, 'mail after the expiry is refused');
});

t.test('the OpenAPI document describes the routes: the create needs nothing, reads the inbox token', async (t) => {
  const doc = (await h.app.inject({ method: 'GET', url: '/openapi.json' })).json();
  const create = doc.paths['/temp-mail/inboxes'].post;
  t.same(create.security, []);
  t.same(Object.keys(create.responses).sort(), ['201', '400', '409', '413', '422', '429', '500', '503']);
  t.ok(create.responses['429'].headers['Retry-After']);
  const list = doc.paths['/temp-mail/inboxes/{id}/messages'].get;
  t.same(list.security, [{ tempInboxToken: [] }]);
  t.match(list.responses['401'].description, /missing_api_key/);
  t.notMatch(list.responses['401'].description, /invalid_api_key/, 'no key is looked at');
  t.ok(doc.components.securitySchemes.tempInboxToken);
});
