import { simpleParser } from 'mailparser';
import t from 'tap';
import { pauseStream } from '../../commands/sending-streams/handlers.ts';
import { FAST_RETRY } from '../support/delivery.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp } from '../support/emails.ts';
import { sharedFreePort, startMxServer } from '../support/mx-server.ts';
import { verifyDkim } from '../support/outbound.ts';
import { eventually, startReceiver } from '../support/receiver.ts';

const port = await sharedFreePort(['127.0.0.1']);
const { h, dns, setUp } = await startSendingApp(t, {
  outbound: { mxPort: port, mxAllowPrivate: true, heloName: 'mta.mail.test' },
  emailDelivery: { pollMs: 20, retry: FAST_RETRY },
  webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50, 50] },
});
dns.set('dest.test', { MX: [{ exchange: 'mx.dest.test', priority: 10 }] });
dns.set('mx.dest.test', { A: ['127.0.0.1'] });
const mx = await startMxServer(t, '127.0.0.1', port, {
  rcpt: (address) => (address.startsWith('gone@') ? { code: 550, message: '5.1.1 No such user' } : null),
});

t.test(
  'POST /emails → the loopback MX, DKIM verified → GET /emails/{id} delivered and bounced, webhooks',
  async (t) => {
    const { ws } = await setUp('sender.example.com');
    const receiver = await startReceiver(t);
    const hook = await h.request(ws.apiKey, 'POST', '/webhooks', {
      url: `${receiver.url}/hook`,
      eventTypes: ['email.*'],
      addressAllowlist: ['a@sender.example.com'],
    });
    t.equal(hook.statusCode, 201, hook.body);

    const res = await h.request(ws.apiKey, 'POST', '/emails', {
      from: 'Jane <a@sender.example.com>',
      to: ['ann@dest.test', 'gone@dest.test'],
      subject: 'Through the pipeline',
      text: 'Hello from the pipeline.',
    });
    t.equal(res.statusCode, 201, res.body);
    const { id } = res.json();

    const email = await eventually(async () => {
      const got = (await h.request(ws.apiKey, 'GET', `/emails/${id}`)).json();
      return got.recipients.every((r: { status: string }) => r.status !== 'queued' && r.status !== 'deferred') && got;
    });
    t.match(email.recipients, [
      { email: 'ann@dest.test', status: 'delivered' },
      { email: 'gone@dest.test', status: 'bounced' },
    ]);
    t.ok(email.history.length >= 4, 'accepted, sending started and one answer per recipient in the history');

    const received = mx.received.find((r) => r.rcptTo.includes('ann@dest.test'))!;
    t.ok(received, 'arrived at the MX');
    const mail = await simpleParser(received.raw);
    t.equal(mail.subject, 'Through the pipeline');
    t.equal(mail.text?.trim().startsWith('Hello from the pipeline.'), true);
    const [dkim] = await verifyDkim(dns, received.raw);
    t.equal(dkim?.status.result, 'pass', 'signed with the key the domain published');
    t.equal(dkim?.signingDomain, 'sender.example.com');

    const list = await h.request(ws.apiKey, 'GET', '/suppressions?q=gone@dest.test');
    t.match(list.json().data, [{ email: 'gone@dest.test', reason: 'bounce', removable: false }]);

    await eventually(async () => receiver.received.length >= 3);
    const types = receiver.received.map((r) => JSON.parse(r.body)).map((b) => [b.type, b.data.id, b.data.recipient]);
    t.same(types.sort(), [
      ['email.bounced', id, 'gone@dest.test'],
      ['email.delivered', id, 'ann@dest.test'],
      ['email.sent', id, undefined],
    ]);
  },
);

t.test('a paused lane refuses live sends with 409 stream_paused until it is resumed', async (t) => {
  const { ws } = await setUp('paused.example.com');
  const body = { from: 'a@paused.example.com', to: 'bo@dest.test', subject: 'Paused?', text: 'Body' };
  await pauseStream(
    h.system.commands,
    { workspaceId: ws.workspaceId, kind: 'system', id: null },
    { stream: 'transactional', reason: 'bounce_rate', rate: 0.2, counts: { sent: 100, bounced: 20, complained: 0 } },
    new Date().toISOString(),
  );
  const refused = await h.request(ws.apiKey, 'POST', '/emails', body);
  t.same(errorOf(refused), [409, 'stream_paused', 'stream']);
  const batch = await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: [body] });
  t.match(batch.json().data, [{ error: { code: 'stream_paused' } }], 'each batch item is refused alike');

  t.equal((await h.request(ws.apiKey, 'POST', '/sending/streams/transactional/resume')).statusCode, 200);
  const sent = await h.request(ws.apiKey, 'POST', '/emails', body);
  t.equal(sent.statusCode, 201, sent.body);
});
