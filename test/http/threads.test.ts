import t from 'tap';
import { threadStream } from '../../domain/threads/events.ts';
import { startSendingApp } from '../support/emails.ts';
import { errorOf } from '../support/domains.ts';
import { walkPages } from '../support/paging.ts';
import { outsideDomains, startTestInbound } from '../support/inbound.ts';

/**
 * The threads API over mail that arrived through the listener (nodemailer as another server's
 * MTA, authentication against the loopback DNS server), read and organised through inject.
 */
const { h, dns, setUp, keyWith } = await startSendingApp(t);
const outside = await outsideDomains(dns);
const mx = await startTestInbound(t, h.system);
const { ws } = await setUp('threads.example.com');
const foreign = await setUp('foreign.example.com');

let n = 0;
/** Mail from outside to `to`; answers its thread as the list shows it. */
async function arrive(to: string, options: Record<string, unknown> = {}, key = ws.apiKey) {
  const messageId = `<t${++n}@outside.test>`;
  const raw = await outside.signed({ to, messageId, ...options });
  await mx.send({ from: 'olga@outside.test', to: [to] }, raw);
  const { rows } = await h.system.database.pool.query('SELECT thread_id FROM thread_messages WHERE header_id = $1', [
    messageId.slice(1, -1),
  ]);
  const thread = await h.request(key, 'GET', `/threads/${rows[0].thread_id}`);
  if (thread.statusCode !== 200) throw new Error(thread.body);
  return thread.json();
}

t.test('a thread with its messages, and the raw message as it arrived', async (t) => {
  const first = await arrive('a@threads.example.com', {
    subject: 'Project kickoff',
    text: 'Shall we meet on Tuesday?\r\n',
    cc: 'Pat <pat@elsewhere.test>',
    attachments: [{ filename: 'agenda.txt', content: 'items' }],
  });
  const reply = await arrive('a@threads.example.com', {
    subject: 'Re: Project kickoff',
    inReplyTo: `<${first.messages[0].messageId}>`,
    text: 'Tuesday works.\r\n',
  });
  t.equal(reply.id, first.id, 'the reply joined the thread');
  t.match(reply, {
    object: 'thread',
    address: 'a@threads.example.com',
    labels: ['inbox'],
    unread: true,
    subject: 'Project kickoff',
    snippet: 'Tuesday works.',
    messageCount: 2,
    participants: ['a@threads.example.com', 'olga@outside.test', 'pat@elsewhere.test'],
  });
  t.equal(reply.messages.length, 2);
  t.match(reply.messages[0], {
    object: 'message',
    threadId: first.id,
    from: { name: 'Olga', address: 'olga@outside.test' },
    cc: [{ name: 'Pat', address: 'pat@elsewhere.test' }],
    subject: 'Project kickoff',
    attachments: [{ filename: 'agenda.txt', contentType: 'text/plain', size: 5, inline: false }],
    envelope: { mailFrom: 'olga@outside.test' },
    authentication: {
      spf: { result: 'pass', domain: 'outside.test' },
      dkim: [{ result: 'pass', domain: 'outside.test', selector: 's1', aligned: true }],
      dmarc: { result: 'pass', fromDomain: 'outside.test', policy: 'reject' },
    },
    spam: { spam: false, reasons: [] },
  });
  t.notOk('sha256' in reply.messages[0].attachments[0], 'blob addresses stay inside');

  const raw = await h.request(ws.apiKey, 'GET', `/threads/${first.id}/messages/${reply.messages[1].id}/raw`);
  t.equal(raw.statusCode, 200);
  t.equal(raw.headers['content-type'], 'message/rfc822');
  t.match(raw.body, /^Return-Path: <olga@outside\.test>\r\nReceived: from mail\.outside\.test/);
  t.match(raw.body, /Tuesday works\./);
  const wrong = await h.request(ws.apiKey, 'GET', `/threads/${first.id}/messages/mes_000000000000000000000000/raw`);
  t.same(errorOf(wrong), [404, 'resource_not_found', 'messageId']);
});

t.test('read state and labels: PATCH, filters, and the labels that cannot be set', async (t) => {
  const thread = await arrive('a@threads.example.com', { subject: 'Invoice 42' });
  const read = await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { unread: false, label: 'archive' });
  t.equal(read.statusCode, 200, read.body);
  t.match(read.json(), { unread: false, labels: ['archive'] });

  const archived = await h.request(ws.apiKey, 'GET', '/threads?label=archive');
  t.same(
    archived.json().data.map((x: { id: string }) => x.id),
    [thread.id],
  );
  const unread = await h.request(ws.apiKey, 'GET', '/threads?unread=false');
  t.ok(unread.json().data.every((x: { unread: boolean }) => !x.unread));
  t.ok(unread.json().data.some((x: { id: string }) => x.id === thread.id));
  t.same((await h.request(ws.apiKey, 'GET', '/threads?label=sent')).json().data, []);

  for (const label of ['sent', 'drafts']) {
    const res = await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { label, unread: true });
    t.same(errorOf(res), [422, 'label_not_directly_settable', 'label']);
  }
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { label: 'work' })), [
    422,
    'label_not_found',
    'label',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { starred: true })), [
    422,
    'unknown_parameter',
    'starred',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { unread: 'yes' })), [
    422,
    'invalid_parameter',
    'unread',
  ]);
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, {
        label: 'inbox',
        unread: true,
        addLabels: ['lbl_000000000000000000000000'],
      }),
    ),
    [422, 'label_not_found', 'addLabels.0'],
    'a bad label id refuses the move and the read state with it',
  );
  t.match((await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json(), { unread: false, labels: ['archive'] });

  // A new message brings an archived conversation back to the inbox, unread.
  const again = await arrive('a@threads.example.com', {
    subject: 'Re: Invoice 42',
    inReplyTo: `<${thread.messages[0].messageId}>`,
  });
  t.match(again, { id: thread.id, unread: true, labels: ['inbox'] });
});

t.test('delete moves to the trash, then deletes for good', async (t) => {
  const thread = await arrive('a@threads.example.com', { subject: 'Old news' });
  const first = await h.request(ws.apiKey, 'DELETE', `/threads/${thread.id}`);
  t.same(first.json(), { object: 'thread', id: thread.id, deleted: false, labels: ['trash'] });
  t.match((await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json(), { labels: ['trash'] });
  const second = await h.request(ws.apiKey, 'DELETE', `/threads/${thread.id}`);
  t.same(second.json(), { object: 'thread', id: thread.id, deleted: true, labels: [] });
  for (const [method, url] of [
    ['GET', `/threads/${thread.id}`],
    ['DELETE', `/threads/${thread.id}`],
    ['PATCH', `/threads/${thread.id}`],
    ['GET', `/threads/${thread.id}/messages/${thread.messages[0].id}/raw`],
  ] as const) {
    t.same(errorOf(await h.request(ws.apiKey, method, url, method === 'PATCH' ? { unread: true } : undefined)), [
      404,
      'resource_not_found',
      'id',
    ]);
  }
});

t.test('search over subject, participants and body text', async (t) => {
  const budget = await arrive('b@threads.example.com', {
    subject: 'Budget review',
    text: 'The spreadsheet is attached, see column zebra.\r\n',
  });
  const party = await arrive('b@threads.example.com', {
    from: 'Quentin Blake <quentin@outside.test>',
    subject: 'Party',
    text: 'Bring snacks.\r\n',
  });
  const ids = async (q: string) =>
    (await h.request(ws.apiKey, 'GET', `/threads?address=b@threads.example.com&q=${encodeURIComponent(q)}`))
      .json()
      .data.map((x: { id: string }) => x.id);
  t.same(await ids('budget'), [budget.id], 'a subject word, any case');
  t.same(await ids('zebra'), [budget.id], 'a body word');
  t.same(await ids('quentin'), [party.id], 'a participant name');
  t.same(await ids('quentin@outside.test'), [party.id], 'a participant address');
  t.same((await ids('snacks or spreadsheet')).sort(), [budget.id, party.id].sort());
  t.same(await ids('"column zebra" -party'), [budget.id]);
  t.same(await ids('nothing-like-this'), []);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/threads?q=${'x'.repeat(201)}`)), [422, 'invalid_parameter', 'q']);
});

t.test('paging: a walk across pages with threads arriving between them', async (t) => {
  const address = 'page@threads.example.com';
  const res = await h.request(ws.apiKey, 'POST', '/addresses', { address });
  t.equal(res.statusCode, 201, res.body);
  const before: string[] = [];
  for (let i = 0; i < 5; i++) before.unshift((await arrive(address, { subject: `Page ${i}` })).id);
  // A new thread lands on top, ahead of the walk: the walk goes on unharmed.
  const { seen, pages } = await walkPages(h, ws.apiKey, `/threads?address=${address}&limit=2`, () =>
    arrive(address, { subject: 'Late arrival' }),
  );
  t.same(seen, before, 'every thread once, newest first; the newcomer is ahead of the cursor');
  t.equal(pages, 3);
  t.equal((await h.request(ws.apiKey, 'GET', '/threads?limit=100')).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/threads?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/threads?cursor=forged')), [400, 'invalid_cursor', 'cursor']);
});

t.test("another workspace's threads are 404; narrowed keys see their mailboxes only; scopes", async (t) => {
  const mine = await arrive('a@threads.example.com', { subject: 'Mine' });
  const theirs = await arrive('a@foreign.example.com', { subject: 'Theirs' }, foreign.ws.apiKey);
  for (const [method, url] of [
    ['GET', `/threads/${theirs.id}`],
    ['PATCH', `/threads/${theirs.id}`],
    ['DELETE', `/threads/${theirs.id}`],
    ['GET', `/threads/${theirs.id}/messages/${theirs.messages[0].id}/raw`],
  ] as const) {
    t.same(errorOf(await h.request(ws.apiKey, method, url, method === 'PATCH' ? { unread: false } : undefined)), [
      404,
      'resource_not_found',
      'id',
    ]);
  }
  t.notOk(
    (await h.request(ws.apiKey, 'GET', '/threads?limit=100'))
      .json()
      .data.some((x: { id: string }) => x.id === theirs.id),
  );
  t.match((await h.request(foreign.ws.apiKey, 'GET', `/threads/${theirs.id}`)).json(), { unread: true });

  const other = await arrive('b@threads.example.com', { subject: 'For b' });
  const narrowed = await keyWith(ws, {
    scopes: ['threads:read', 'threads:write'],
    addressAllowlist: ['a@threads.example.com'],
  });
  const list = (await h.request(narrowed, 'GET', '/threads?limit=100')).json().data;
  t.ok(list.length > 0);
  t.ok(list.every((x: { address: string }) => x.address === 'a@threads.example.com'));
  t.equal((await h.request(narrowed, 'GET', `/threads/${mine.id}`)).statusCode, 200);
  t.same(errorOf(await h.request(narrowed, 'GET', `/threads/${other.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(narrowed, 'DELETE', `/threads/${other.id}`)), [404, 'resource_not_found', 'id']);
  t.same((await h.request(narrowed, 'GET', '/threads?address=b@threads.example.com')).json().data, []);
  const byDomain = await keyWith(ws, { scopes: ['threads:read'], domainAllowlist: ['threads.example.com'] });
  t.equal((await h.request(byDomain, 'GET', `/threads/${other.id}`)).statusCode, 200);

  const readOnly = await keyWith(ws, { scopes: ['threads:read'] });
  t.same(errorOf(await h.request(readOnly, 'PATCH', `/threads/${mine.id}`, { unread: false })), [
    403,
    'insufficient_scope',
    null,
  ]);
  const none = await keyWith(ws, { scopes: ['emails:read'] });
  t.same(errorOf(await h.request(none, 'GET', '/threads')), [403, 'insufficient_scope', null]);
  // Mail arrives in live mode: a test key sees none of it.
  const test = await keyWith(ws, { scopes: ['threads:read'], mode: 'test' });
  t.same((await h.request(test, 'GET', '/threads')).json().data, []);
  t.same(errorOf(await h.request(test, 'GET', `/threads/${mine.id}`)), [404, 'resource_not_found', 'id']);
});

t.test("a fault inside the service answers the operation's own 500, and changes nothing", async (t) => {
  const thread = await arrive('a@threads.example.com', { subject: 'Faulty' });
  // An event no code of this version knows, in the thread's own stream: loading the thread fails
  // inside the service (no projector reads the type, so the read models carry on).
  await h.system.store.append(
    threadStream(ws.workspaceId, thread.id),
    [{ type: 'FromTheFuture', version: 1, data: {} }],
    'any',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { unread: false })), [
    500,
    'thread_update_failed',
    null,
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/threads/${thread.id}`)), [500, 'thread_delete_failed', null]);
  t.match((await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json(), { unread: true, labels: ['inbox'] });
});
