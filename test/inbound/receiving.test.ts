import t from 'tap';
import { openSystem } from '../../system.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';
import { startSendingApp } from '../support/emails.ts';
import { outsideDomains, startTestInbound } from '../support/inbound.ts';
import { eventually, startReceiver } from '../support/receiver.ts';

/**
 * The receiving slice over the real path: another server's MTA (nodemailer) hands mail to our
 * listener on loopback, authentication asks the loopback DNS server, and what is filed is read
 * back from the event store and the threads read model.
 */
const { h, dns, setUp } = await startSendingApp(t, {
  webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50, 50] },
});
const outside = await outsideDomains(dns);
const mx = await startTestInbound(t, h.system);
const { ws, domain } = await setUp('inbound.example.com');
const db = h.system.database.pool;

async function threadEvents(threadId: string) {
  return h.system.store.readStream(`ws-${ws.workspaceId}.thread-${threadId}`);
}

async function filed(headerId: string) {
  const { rows } = await db.query(
    `SELECT m.*, t.label, t.unread, t.message_count FROM thread_messages m JOIN threads t ON t.id = m.thread_id
     WHERE m.header_id = $1 ORDER BY m.position`,
    [headerId],
  );
  return rows;
}

const code = async (promise: Promise<unknown>) =>
  promise.then(
    () => 250,
    (error: { responseCode?: number }) => error.responseCode,
  );

t.test('signed mail from outside to an address is authenticated, parsed, stored and filed', async (t) => {
  const raw = await outside.signed({
    to: 'a@inbound.example.com',
    subject: 'Quarterly numbers',
    text: `The figures for the quarter are attached.\r\n${'Padding words. '.repeat(20)}\r\nThe closing line, past the snippet.\r\n`,
    attachments: [{ filename: 'q.csv', content: 'a,b\n1,2\n', contentType: 'text/csv' }],
    messageId: '<first@outside.test>',
  });
  const info = await mx.send({ from: 'bounces@outside.test', to: ['a@inbound.example.com'] }, raw);
  t.same(info.accepted, ['a@inbound.example.com']);
  const [row] = await filed('first@outside.test');
  t.ok(row, 'in the threads read model');
  t.equal(row.address, 'a@inbound.example.com');
  t.equal(row.label, 'inbox');
  t.equal(row.unread, true);
  const [received] = await threadEvents(row.thread_id);
  t.equal(received!.type, 'MessageReceived');
  const d = received!.data as any;
  t.match(d.mailbox, { address: 'a@inbound.example.com', domainId: domain.id, domain: 'inbound.example.com' });
  t.match(d.authentication.spf, { result: 'pass', domain: 'outside.test' });
  t.match(d.authentication.dkim, [{ result: 'pass', domain: 'outside.test', aligned: true }]);
  t.match(d.authentication.dmarc, { result: 'pass', policy: 'reject' });
  t.same(d.spam, { spam: false, reasons: [], score: null });
  t.equal(d.summary.subject, 'Quarterly numbers');
  t.match(d.summary.attachments, [{ filename: 'q.csv', contentType: 'text/csv', size: 8 }]);
  t.equal(d.threadedBy, 'new');
  t.same(d.rcptTo, ['a@inbound.example.com']);
  t.notOk(JSON.stringify(d).includes('The closing line'), 'the body past the snippet is not in the event');
  const stored = await h.system.blobs.get(d.raw.sha256);
  t.ok(stored?.toString('latin1').includes('The figures for the quarter'), 'the raw message is in the blob store');
  t.ok(await h.system.blobs.has(d.summary.attachments[0].sha256), 'and the attachment');
  t.same(mx.errors, []);
});

t.test('a reply joins the thread; the same message delivered again is filed once', async (t) => {
  const first = await outside.signed({
    to: 'a@inbound.example.com',
    subject: 'Lunch',
    messageId: '<lunch@outside.test>',
  });
  await mx.send({ from: 'olga@outside.test', to: ['a@inbound.example.com'] }, first);
  const reply = await outside.signed({
    to: 'a@inbound.example.com',
    subject: 'Re: Lunch',
    messageId: '<lunch-2@outside.test>',
    inReplyTo: '<lunch@outside.test>',
    references: ['<lunch@outside.test>'],
  });
  await mx.send({ from: 'olga@outside.test', to: ['a@inbound.example.com'] }, reply);
  await mx.send({ from: 'olga@outside.test', to: ['a@inbound.example.com'] }, reply);
  const [one] = await filed('lunch@outside.test');
  const two = await filed('lunch-2@outside.test');
  t.equal(two.length, 1, 'filed once');
  t.equal(two[0].thread_id, one.thread_id);
  t.equal(two[0].message_count, 2);
  const events = await threadEvents(one.thread_id);
  t.same(
    events.map((e) => [e.type, (e.data as any).threadedBy]),
    [
      ['MessageReceived', 'new'],
      ['MessageReceived', 'in-reply-to'],
    ],
  );
});

t.test('recipients that are not ours are refused at RCPT with 550', async (t) => {
  const raw = await outside.signed({ to: 'nobody@inbound.example.com' });
  for (const rcpt of ['nobody@inbound.example.com', 'off@inbound.example.com', 'a@elsewhere.example']) {
    t.equal(await code(mx.send({ from: 'olga@outside.test', to: [rcpt] }, raw)), 550, rcpt);
  }
  // An unverified domain of a workspace takes no mail.
  const other = await h.workspace();
  const res = await h.request(other.apiKey, 'POST', '/domains', { domain: 'unverified.example.com' });
  t.equal(res.statusCode, 201);
  t.equal(await code(mx.send({ from: 'olga@outside.test', to: ['a@unverified.example.com'] }, raw)), 550);
  // One good recipient among refused ones: taken for that one.
  const info = await mx.send(
    { from: 'olga@outside.test', to: ['nobody@inbound.example.com', 'b@inbound.example.com'] },
    raw,
  );
  t.same(info.accepted, ['b@inbound.example.com']);
  t.same(info.rejected, ['nobody@inbound.example.com']);
});

t.test('a subaddress reaches its address; a catch-all takes the rest once turned on', async (t) => {
  const plus = await outside.signed({ to: 'b+news@inbound.example.com', messageId: '<plus@outside.test>' });
  await mx.send({ from: 'olga@outside.test', to: ['B+news@Inbound.Example.com'] }, plus);
  t.equal((await filed('plus@outside.test'))[0]?.address, 'b@inbound.example.com');

  const patch = await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { catchAll: true });
  t.equal(patch.statusCode, 200, patch.body);
  const raw = await outside.signed({ to: 'sales@inbound.example.com', messageId: '<catch@outside.test>' });
  const info = await mx.send(
    { from: 'olga@outside.test', to: ['sales@inbound.example.com', 'info@inbound.example.com'] },
    raw,
  );
  t.same(info.accepted, ['sales@inbound.example.com', 'info@inbound.example.com']);
  const rows = await filed('catch@outside.test');
  t.equal(rows.length, 1, 'one mailbox, filed once');
  t.equal(rows[0].address, '*@inbound.example.com');
  const [event] = await threadEvents(rows[0].thread_id);
  t.same((event!.data as any).rcptTo, ['sales@inbound.example.com', 'info@inbound.example.com']);
  t.equal((event!.data as any).mailbox.addressId, null);
  // A disabled address stays refused even with the catch-all on.
  t.equal(await code(mx.send({ from: 'olga@outside.test', to: ['off@inbound.example.com'] }, raw)), 550);
  await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { catchAll: false });
});

t.test('mail failing DMARC under p=reject is filed as spam, not refused', async (t) => {
  const raw = await outside.unsigned({
    from: 'Bank <security@spoof.test>',
    to: 'a@inbound.example.com',
    messageId: '<spoof@spoof.test>',
  });
  await mx.send({ from: 'security@spoof.test', to: ['a@inbound.example.com'] }, raw);
  const [row] = await filed('spoof@spoof.test');
  t.equal(row.label, 'spam');
  t.same(row.spam, { spam: true, reasons: ['dmarc_reject'], score: null });
  t.match(row.authentication.dmarc, { result: 'fail', policy: 'reject' });
});

t.test('one message to two workspaces is filed in each, with its own thread', async (t) => {
  const second = await setUp('second.example.com');
  const raw = await outside.signed({
    to: ['a@inbound.example.com', 'a@second.example.com'],
    messageId: '<both@outside.test>',
  });
  await mx.send({ from: 'olga@outside.test', to: ['a@inbound.example.com', 'a@second.example.com'] }, raw);
  const rows = await filed('both@outside.test');
  t.same(
    rows.map((r) => [r.workspace_id, r.address]).sort(),
    [
      [second.ws.workspaceId, 'a@second.example.com'],
      [ws.workspaceId, 'a@inbound.example.com'],
    ].sort(),
  );
  t.not(rows[0].thread_id, rows[1].thread_id);
});

t.test('a reply to our sent mail says so (SentEmailReplied); mail from a contact moves its lastSeenAt', async (t) => {
  const contact = await h.request(ws.apiKey, 'POST', '/contacts', { email: 'olga@outside.test' });
  t.equal(contact.statusCode, 201, contact.body);
  const sent = await h.request(ws.apiKey, 'POST', '/emails', {
    from: 'a@inbound.example.com',
    to: 'olga@example.org',
    subject: 'Our offer',
    text: 'Here it is.',
  });
  t.equal(sent.statusCode, 201, sent.body);
  const [accepted] = await h.system.store.readStream(`ws-${ws.workspaceId}.email-${sent.json().id}`);
  const sentId = (accepted!.data as any).messageId as string;
  const raw = await outside.signed({
    to: 'a@inbound.example.com',
    subject: 'Re: Our offer',
    messageId: '<answer@outside.test>',
    inReplyTo: `<${sentId}>`,
    references: [`<${sentId}>`],
  });
  await mx.send({ from: 'olga@outside.test', to: ['a@inbound.example.com'] }, raw);
  const [row] = await filed('answer@outside.test');
  // The sent mail's own filing (test/processes/sent-mail.test.ts) may join the thread before or after.
  const events = (await threadEvents(row.thread_id)).filter((e) => e.type !== 'MessageSent');
  t.same(
    events.map((e) => e.type),
    ['MessageReceived', 'SentEmailReplied'],
  );
  t.match(events[1]!.data, { emailId: sent.json().id, messageId: row.id, from: 'olga@outside.test' });
  const seen = await eventually(async () => {
    const got = (await h.request(ws.apiKey, 'GET', `/contacts/${contact.json().id}`)).json();
    return got.lastSeenAt && got;
  });
  t.equal(seen.lastSeenAt, row.received_at.toISOString());
});

t.test('a recipient is answered 451 when the read models cannot be asked', async (t) => {
  // A system whose database is gone: the mailbox lookup fails, and the sender is told to come back.
  const gone = await openSystem(h.url, {
    secretsKey: TEST_SECRETS_KEY,
    project: false,
    deliver: false,
    dataDir: t.testdirName,
  });
  await gone.close();
  const down = await startTestInbound(t, gone);
  const raw = await outside.signed({ to: 'a@inbound.example.com' });
  t.equal(await code(down.send({ from: 'olga@outside.test', to: ['a@inbound.example.com'] }, raw)), 451);
  t.match(down.errors, [/recipient a@inbound.example.com/]);
});

t.test('webhooks: email.received for every message, narrowed by address; email.replied for answers', async (t) => {
  const hooks = await setUp('hooks.example.com');
  const receiver = await startReceiver(t);
  const wide = await h.request(hooks.ws.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/wide`,
    eventTypes: ['email.received', 'email.replied'],
  });
  t.equal(wide.statusCode, 201, wide.body);
  // The default set: email.* without email.replied, for b@ only.
  const narrow = await h.request(hooks.ws.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/narrow`,
    addressAllowlist: ['b@hooks.example.com'],
  });
  t.equal(narrow.statusCode, 201, narrow.body);

  const sent = await h.request(hooks.ws.apiKey, 'POST', '/emails', {
    from: 'a@hooks.example.com',
    to: 'olga@example.org',
    subject: 'Tickets',
    text: 'Two tickets for Friday.',
  });
  t.equal(sent.statusCode, 201, sent.body);
  const [accepted] = await h.system.store.readStream(`ws-${hooks.ws.workspaceId}.email-${sent.json().id}`);
  const sentId = (accepted!.data as any).messageId as string;
  await mx.send(
    { from: 'olga@outside.test', to: ['a@hooks.example.com'] },
    await outside.signed({ to: 'a@hooks.example.com', subject: 'Re: Tickets', references: [`<${sentId}>`] }),
  );
  await mx.send(
    { from: 'olga@outside.test', to: ['b@hooks.example.com'] },
    await outside.signed({ to: 'b@hooks.example.com', subject: 'For b', messageId: '<for-b@outside.test>' }),
  );
  // The wide endpoint names two types, so the sent mail's email.sent is not among them; the
  // narrow one hears nothing of a@'s mail. A short wait lets a wrong extra delivery show.
  await eventually(async () => receiver.received.length >= 4);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const got = receiver.received
    .map((r) => ({ path: r.path, ...JSON.parse(r.body) }))
    .map((b) => [b.path, b.type, b.data.address, b.data.subject]);
  t.same(
    got.sort(),
    [
      ['/narrow', 'email.received', 'b@hooks.example.com', 'For b'],
      ['/wide', 'email.received', 'a@hooks.example.com', 'Re: Tickets'],
      ['/wide', 'email.received', 'b@hooks.example.com', 'For b'],
      ['/wide', 'email.replied', 'a@hooks.example.com', 'Re: Tickets'],
    ].sort(),
  );
  const replied = receiver.received.map((r) => JSON.parse(r.body)).find((b) => b.type === 'email.replied');
  t.match(replied.data, { emailId: sent.json().id, from: 'olga@outside.test' });
  const received = receiver.received.map((r) => JSON.parse(r.body)).find((b) => b.data.subject === 'For b');
  t.match(received.data, {
    threadId: /^thr_/,
    id: /^mes_/,
    messageId: 'for-b@outside.test',
    from: { address: 'olga@outside.test' },
    spam: false,
    label: 'inbox',
  });
});

t.test('threading lookups: subject fallback for the same sender, a reply before its parent', async (t) => {
  const send = async (options: Record<string, unknown>, from = 'olga@outside.test') =>
    mx.send({ from, to: ['b@inbound.example.com'] }, await outside.signed({ to: 'b@inbound.example.com', ...options }));
  await send({ subject: 'Plans for May', messageId: '<plans@outside.test>' });
  // A reply whose client dropped the references: same normalised subject, same sender.
  await send({ subject: 'RE: [team] Plans for May', messageId: '<plans-2@outside.test>' });
  // The same subject from a stranger stays out of the conversation.
  await send({
    from: 'Mallory <mallory@outside.test>',
    subject: 'Re: Plans for May',
    messageId: '<plans-3@outside.test>',
  });
  const [plans] = await filed('plans@outside.test');
  const [second] = await filed('plans-2@outside.test');
  const [third] = await filed('plans-3@outside.test');
  t.equal(second.thread_id, plans.thread_id);
  t.not(third.thread_id, plans.thread_id);
  t.match(
    (await threadEvents(plans.thread_id)).map((e) => (e.data as any).threadedBy),
    ['new', 'subject'],
  );

  // The reply arrives first; its parent then joins the reply's thread.
  await send({ subject: 'Re: Venue', messageId: '<venue-2@outside.test>', inReplyTo: '<venue@outside.test>' });
  await send({ subject: 'Venue', messageId: '<venue@outside.test>' });
  const [reply] = await filed('venue-2@outside.test');
  const [parent] = await filed('venue@outside.test');
  t.equal(parent.thread_id, reply.thread_id);
  t.match(
    (await threadEvents(reply.thread_id)).map((e) => (e.data as any).threadedBy),
    ['new', 'referenced-by'],
  );
});
