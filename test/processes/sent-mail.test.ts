import t from 'tap';
import { startSendingApp } from '../support/emails.ts';
import { outsideDomains, startTestInbound } from '../support/inbound.ts';
import { eventually } from '../support/receiver.ts';

/**
 * Sent mail in its mailbox's threads, over the real path: POST /emails, the filing process on
 * the bus, then a reply handed to our MX by another server's MTA, read back through the threads API.
 */
const { h, dns, setUp, keyWith } = await startSendingApp(t);
const outside = await outsideDomains(dns);
const mx = await startTestInbound(t, h.system);
const { ws } = await setUp('sent.example.com');

const send = async (body: object, key = ws.apiKey) => {
  const res = await h.request(key, 'POST', '/emails', { from: 'a@sent.example.com', text: 'Our words.', ...body });
  t.equal(res.statusCode, 201, res.body);
  return res.json();
};
const threadOf = async (emailId: string) => {
  const { rows } = await h.system.database.pool.query('SELECT thread_id FROM thread_messages WHERE email_id = $1', [
    emailId,
  ]);
  return rows[0]?.thread_id as string | undefined;
};
const thread = async (id: string) => (await h.request(ws.apiKey, 'GET', `/threads/${id}`)).json();
const messageIdOf = async (emailId: string) =>
  ((await h.system.store.readStream(`ws-${ws.workspaceId}.email-${emailId}`))[0]!.data as { messageId: string })
    .messageId;

t.test('a sent email opens a read thread under archive and sent, with its parts', async (t) => {
  const email = await send({
    to: 'olga@outside.test',
    cc: 'petra@example.org',
    bcc: 'boss@example.net',
    subject: 'Our offer',
    text: 'The quarterly pumpernickel offer.',
    attachments: [{ filename: 'offer.txt', content: Buffer.from('the offer').toString('base64') }],
  });
  const threadId = await eventually(() => threadOf(email.id));
  const got = await thread(threadId);
  t.match(got, {
    address: 'a@sent.example.com',
    labels: ['archive', 'sent'],
    unread: false,
    messageCount: 1,
    subject: 'Our offer',
  });
  t.same(got.participants, ['a@sent.example.com', 'boss@example.net', 'olga@outside.test', 'petra@example.org']);
  const [message] = got.messages;
  t.match(message, {
    direction: 'sent',
    emailId: email.id,
    messageId: await messageIdOf(email.id),
    from: { address: 'a@sent.example.com' },
    to: [{ address: 'olga@outside.test' }],
    cc: [{ address: 'petra@example.org' }],
    bcc: [{ address: 'boss@example.net' }],
    envelope: { mailFrom: `${email.id}@bounces.sent.example.com` },
    authentication: null,
    spam: null,
  });
  const file = await h.request(ws.apiKey, 'GET', `/files/${message.attachments[0].fileId}/content`);
  t.equal(file.statusCode, 200);
  t.equal(file.body, 'the offer');
  const raw = await h.request(ws.apiKey, 'GET', `/threads/${threadId}/messages/${message.id}/raw`);
  t.match(raw.body, /Subject: Our offer/);

  const sent = (await h.request(ws.apiKey, 'GET', '/threads?label=sent')).json();
  t.ok(
    sent.data.some((x: { id: string }) => x.id === threadId),
    'listed under sent',
  );
  const inbox = (await h.request(ws.apiKey, 'GET', '/threads?label=inbox')).json();
  t.notOk(
    inbox.data.some((x: { id: string }) => x.id === threadId),
    'not in the inbox',
  );
  const found = (await h.request(ws.apiKey, 'GET', '/threads?q=pumpernickel')).json();
  t.same(
    found.data.map((x: { id: string }) => x.id),
    [threadId],
    'its body is searched',
  );
});

t.test('a reply joins the sent thread and brings it to the inbox; our answer joins it too', async (t) => {
  const email = await send({ to: 'olga@outside.test', subject: 'Tickets' });
  const threadId = await eventually(() => threadOf(email.id));
  const sentId = await messageIdOf(email.id);
  await mx.send(
    { from: 'olga@outside.test', to: ['a@sent.example.com'] },
    await outside.signed({
      to: 'a@sent.example.com',
      subject: 'Re: Tickets',
      messageId: '<tickets-answer@outside.test>',
      inReplyTo: `<${sentId}>`,
      references: [`<${sentId}>`],
    }),
  );
  t.match(await thread(threadId), { labels: ['inbox', 'sent'], unread: true, messageCount: 2 });
  const events = await h.system.store.readStream(`ws-${ws.workspaceId}.thread-${threadId}`);
  t.same(
    events.map((e) => e.type),
    ['MessageSent', 'MessageReceived', 'SentEmailReplied'],
  );
  t.match(events[1]!.data, { threadedBy: 'in-reply-to' });

  const marked = await h.request(ws.apiKey, 'PATCH', `/threads/${threadId}`, { unread: false });
  t.equal(marked.statusCode, 200, marked.body);
  const answer = await send({
    to: 'olga@outside.test',
    subject: 'Re: Tickets',
    inReplyTo: '<tickets-answer@outside.test>',
    references: [`<${sentId}>`, '<tickets-answer@outside.test>'],
  });
  t.equal(await eventually(() => threadOf(answer.id)), threadId, 'our answer threads with the reply');
  const got = await thread(threadId);
  t.match(got, { labels: ['inbox', 'sent'], unread: false, messageCount: 3 });
  t.same(
    got.messages.map((m: { direction: string }) => m.direction),
    ['sent', 'received', 'sent'],
  );
});

t.test('mail a mailbox sends to itself is in its thread as sent and as received', async (t) => {
  const email = await send({ to: 'a@sent.example.com', subject: 'Note to self' });
  const threadId = await eventually(() => threadOf(email.id));
  const headerId = await messageIdOf(email.id);
  // Our own delivery hands it to the MX of sent.example.com, which the tests point at another server: hand it over here.
  const [accepted] = await h.system.store.readStream(`ws-${ws.workspaceId}.email-${email.id}`);
  const raw = await h.system.blobs.get((accepted!.data as { raw: { sha256: string } }).raw.sha256);
  await mx.send({ from: `${email.id}@bounces.sent.example.com`, to: ['a@sent.example.com'] }, raw!);
  const got = await eventually(async () => {
    const x = await thread(threadId);
    return x.messageCount === 2 && x;
  });
  t.same(
    got.messages.map((m: { direction: string; messageId: string }) => [m.direction, m.messageId]),
    [
      ['sent', headerId],
      ['received', headerId],
    ],
  );
  t.match(got, { labels: ['inbox', 'sent'], unread: true });
});

t.test('scheduled mail is filed when it goes out; cancelled mail, test mail and others are never', async (t) => {
  const later = new Date(Date.now() + 3_600_000).toISOString();
  const scheduled = await send({ to: 'olga@outside.test', subject: 'Later', scheduledAt: later });
  const cancelled = await send({ to: 'olga@outside.test', subject: 'Never', scheduledAt: later });
  const cancel = await h.request(ws.apiKey, 'POST', `/emails/${cancelled.id}/cancel`);
  t.equal(cancel.statusCode, 200, cancel.body);
  const testKey = await keyWith(ws, { scopes: ['emails:send', 'threads:read'], mode: 'test' });
  const test = await send({ to: 'olga@outside.test', subject: 'Test mode' }, testKey);
  // An email sent after them is filed: the ones before it were passed over, not waiting.
  const after = await send({ to: 'olga@outside.test', subject: 'After' });
  await eventually(() => threadOf(after.id));
  t.equal(await threadOf(scheduled.id), undefined, 'not before it goes out');
  t.equal(await threadOf(cancelled.id), undefined);
  t.equal(await threadOf(test.id), undefined);
  const owed = await h.system.database.pool.query(
    'SELECT email_id, due_at FROM sent_mail_filing WHERE email_id = ANY($1)',
    [[scheduled.id, cancelled.id, test.id]],
  );
  t.same(
    owed.rows.map((r) => [r.email_id, r.due_at]),
    [[scheduled.id, null]],
    'the scheduled one waits for its sending to start; the others owe nothing',
  );
  // Its time comes: the delivery process starts sending it, and it is filed with that time.
  await h.system.database.pool.query(
    `UPDATE email_delivery_work SET next_attempt_at = now(), enqueued_at = NULL WHERE email_id = $1`,
    [scheduled.id],
  );
  const threadId = await eventually(() => threadOf(scheduled.id));
  const events = await h.system.store.readStream(`ws-${ws.workspaceId}.email-${scheduled.id}`);
  const started = events.find((e) => e.type === 'EmailSendingStarted')!;
  t.equal((await thread(threadId)).messages[0].receivedAt, started.data.startedAt);
});
