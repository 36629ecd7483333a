import t from 'tap';
import { appendDecided } from '../../commands/execute.ts';
import type { EmailEvent } from '../../domain/emails/events.ts';
import { emailStream } from '../../domain/emails/events.ts';
import { startSendingApp } from '../support/emails.ts';

/**
 * The delivery outcome events as the delivery process manager appends them, given here by hand
 * (the message is scheduled an hour ahead, so the real one leaves it alone; it is tested in
 * test/processes/email-delivery.test.ts and test/http/emails-deliver.test.ts): the read model
 * shows each recipient's standing and every attempt's SMTP reply.
 */
t.test('GET /emails/{id}: per-recipient status and the history of attempts', async (t) => {
  const { h, setUp } = await startSendingApp(t);
  const { ws } = await setUp('example.com');
  const sent = (
    await h.request(ws.apiKey, 'POST', '/emails', {
      from: 'a@example.com',
      to: ['ok@example.org', 'slow@example.org', 'bad@example.org'],
      subject: 'Hi',
      text: 'Body',
      scheduledAt: new Date(Date.now() + 3_600_000).toISOString(),
    })
  ).json();
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  const stream = emailStream(ws.workspaceId, sent.id);
  const from = { addressId: sent.from.addressId, domainId: 'd', email: 'a@example.com' };
  const attempt = (recipient: string, n: number, code: number, response: string) => ({
    emailId: sent.id,
    messageId: sent.messageId,
    from,
    stream: 'transactional' as const,
    recipient,
    attempt: n,
    code,
    enhancedCode: `${String(code)[0]}.0.0`,
    response,
    mx: 'mx.example.org',
    tls: true,
    at: new Date().toISOString(),
  });
  const append = async (events: EmailEvent[]) => {
    const recorded = await h.system.store.readStream(stream);
    await appendDecided(h.system.commands, actor, stream, events, recorded.length - 1);
  };
  const read = async () => (await h.request(ws.apiKey, 'GET', `/emails/${sent.id}`)).json();

  await append([{ type: 'EmailSendingStarted', data: { emailId: sent.id, startedAt: new Date().toISOString() } }]);
  t.equal((await read()).status, 'sending');
  await append([
    { type: 'EmailRecipientDelivered', data: attempt('ok@example.org', 1, 250, '250 2.0.0 OK queued') },
    {
      type: 'EmailRecipientDeferred',
      // An hour ahead: the real delivery process would otherwise retry it while the test runs.
      data: {
        ...attempt('slow@example.org', 1, 451, '451 4.7.1 try later'),
        nextAttemptAt: new Date(Date.now() + 3_600_000).toISOString(),
      },
    },
    {
      type: 'EmailRecipientBounced',
      data: { ...attempt('bad@example.org', 1, 550, '550 5.1.1 no such user'), bounce: 'hard' },
    },
  ]);
  let email = await read();
  t.equal(email.status, 'sending', 'a deferred recipient is still waiting');
  t.match(email.recipients, [
    {
      email: 'ok@example.org',
      status: 'delivered',
      attempts: 1,
      lastResponse: { code: 250, message: '250 2.0.0 OK queued' },
    },
    { email: 'slow@example.org', status: 'deferred', attempts: 1, lastResponse: { code: 451 } },
    { email: 'bad@example.org', status: 'bounced', reason: 'hard', lastResponse: { code: 550, enhancedCode: '5.0.0' } },
  ]);
  await append([{ type: 'EmailRecipientDelivered', data: attempt('slow@example.org', 2, 250, '250 OK') }]);
  await append([
    {
      type: 'EmailRecipientComplained',
      data: {
        emailId: sent.id,
        messageId: sent.messageId,
        from,
        stream: 'transactional',
        recipient: 'ok@example.org',
        feedbackType: 'abuse',
        at: new Date().toISOString(),
      },
    },
  ]);
  email = await read();
  t.equal(email.status, 'partially_bounced');
  t.match(email.recipients, [
    { status: 'complained', reason: 'abuse' },
    { status: 'delivered', attempts: 2 },
    { status: 'bounced' },
  ]);
  t.same(
    email.history.map((e: { type: string; recipient: string | null }) => [e.type, e.recipient]),
    [
      ['EmailAccepted', null],
      ['EmailSendingStarted', null],
      ['EmailRecipientDelivered', 'ok@example.org'],
      ['EmailRecipientDeferred', 'slow@example.org'],
      ['EmailRecipientBounced', 'bad@example.org'],
      ['EmailRecipientDelivered', 'slow@example.org'],
      ['EmailRecipientComplained', 'ok@example.org'],
    ],
  );
  t.match(email.history[3].detail, {
    attempt: 1,
    code: 451,
    response: '451 4.7.1 try later',
    mx: 'mx.example.org',
    tls: true,
    nextAttemptAt: String,
  });
  t.match(email.history[4].detail, { bounce: 'hard', code: 550 });
  t.equal((await h.request(ws.apiKey, 'GET', '/emails?status=partially_bounced')).json().data[0].id, sent.id);
});
