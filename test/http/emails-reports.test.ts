import nodemailer from 'nodemailer';
import t from 'tap';
import { returnPathHandler, returnPathPolicy, returnPathRoute } from '../../processes/emails/return-path.ts';
import { InboundListener } from '../../infra/inbound/listener.ts';
import { FAST_RETRY } from '../support/delivery.ts';
import { startSendingApp } from '../support/emails.ts';
import { eventually, startReceiver } from '../support/receiver.ts';
import { arfReport, headersOf, postfixDsn } from '../support/reports.ts';

const { h, mx, setUp } = await startSendingApp(t, {
  emailDelivery: { pollMs: 20, retry: FAST_RETRY },
  webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50, 50] },
});
// The listener as main will run it for return-path recipients (the receiving slice composes the
// mailboxes' policy with this one).
const faults: unknown[] = [];
const listener = await InboundListener.start({
  port: 0,
  host: '127.0.0.1',
  hostname: 'mx.ours.test',
  maxMessageBytes: 1024 * 1024,
  blobs: h.system.blobs,
  policy: returnPathPolicy(h.system.commands),
  handler: returnPathHandler(h.system.commands),
  onError: (error) => faults.push(error),
});
t.teardown(() => listener.close());
t.teardown(() => {
  if (faults.length > 0) throw new Error(`a fault of ours answered 451: ${faults.join('; ')}`);
});

/** Another mail system handing a message to our MX. */
const outside = nodemailer.createTransport({ host: '127.0.0.1', port: listener.port, secure: false, ignoreTLS: true });
const offer = (to: string, raw: string, from = '') => outside.sendMail({ envelope: { from, to: [to] }, raw });
const refusalOf = (to: string, raw = 'Subject: x\r\n\r\nx\r\n') =>
  offer(to, raw).then(
    () => null,
    (error: { responseCode?: number; response?: string }) => [error.responseCode, error.response],
  );

type Ws = Awaited<ReturnType<typeof setUp>>['ws'];

/** A live send from `a@<domain>` delivered to the loopback MX: its id, return path and the bytes that arrived. */
async function delivered(ws: Ws, domain: string, to: string[]) {
  const res = await h.request(ws.apiKey, 'POST', '/emails', {
    from: `a@${domain}`,
    to,
    subject: 'Your receipt',
    text: 'Thanks for your order.',
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  const { id } = res.json();
  await eventually(async () => {
    const got = (await h.request(ws.apiKey, 'GET', `/emails/${id}`)).json();
    return got.recipients.every((r: { status: string }) => r.status === 'delivered');
  });
  const returnPath = `${id}@bounces.${domain}`;
  const arrived = mx.received.find((r) => r.mailFrom === returnPath)!;
  return { id: id as string, returnPath, raw: arrived.raw };
}

const streamLength = async (ws: Ws, id: string) =>
  (await h.system.store.readStream(`ws-${ws.workspaceId}.email-${id}`)).length;
const lanes = async (ws: Ws) =>
  Object.fromEntries(
    (await h.request(ws.apiKey, 'GET', '/sending/streams'))
      .json()
      .data.map((l: { stream: string; sent: number; bounced: number; complained: number }) => [
        l.stream,
        { sent: l.sent, bounced: l.bounced, complained: l.complained },
      ]),
  );
const suppressionsOf = async (ws: Ws, email: string) =>
  (await h.request(ws.apiKey, 'GET', `/suppressions?q=${encodeURIComponent(email)}`)).json().data;

t.test('a DSN after delivery: bounced from the report, a permanent suppression, the webhook, the lane', async (t) => {
  const { ws } = await setUp('dsn.example.com');
  const receiver = await startReceiver(t);
  const hook = await h.request(ws.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/hook`,
    eventTypes: ['email.bounced', 'email.complained'],
  });
  t.equal(hook.statusCode, 201);
  const sent = await delivered(ws, 'dsn.example.com', ['ann@example.org', 'bo@example.org']);
  await eventually(async () => (await lanes(ws)).transactional.sent === 2);

  const dsn = postfixDsn({
    returnPath: sent.returnPath,
    returnedHeaders: headersOf(sent.raw),
    recipients: [
      {
        recipient: 'ann@example.org',
        action: 'failed',
        status: '5.1.1',
        diagnostic: '550 5.1.1 <ann@example.org>: Recipient address rejected: User unknown',
      },
    ],
  });
  const answer = await offer(sent.returnPath, dsn);
  t.match(answer.response, /^250 /, 'taken from the null sender');

  const email = (await h.request(ws.apiKey, 'GET', `/emails/${sent.id}`)).json();
  t.equal(email.status, 'partially_bounced');
  t.match(email.recipients, [
    {
      email: 'ann@example.org',
      status: 'bounced',
      reason: 'hard',
      attempts: 1,
      lastResponse: { code: 550, enhancedCode: '5.1.1', message: /User unknown/ },
    },
    { email: 'bo@example.org', status: 'delivered' },
  ]);
  t.match(email.history.at(-1), {
    type: 'EmailRecipientBounced',
    recipient: 'ann@example.org',
    detail: { bounce: 'hard', source: 'dsn', mx: 'mx2.dest.test' },
  });

  const [entry] = await suppressionsOf(ws, 'ann@example.org');
  t.match(entry, { email: 'ann@example.org', reason: 'bounce', removable: false, detail: /User unknown/ });
  const removal = await h.request(ws.apiKey, 'DELETE', `/suppressions/${entry.id}`);
  t.equal(removal.statusCode, 409);
  t.equal(removal.json().error.code, 'suppression_not_removable');

  t.same((await lanes(ws)).transactional, { sent: 2, bounced: 1, complained: 0 }, 'a bounce, not another send');
  await eventually(async () => receiver.received.length >= 1);
  t.match(JSON.parse(receiver.received[0]!.body), {
    type: 'email.bounced',
    data: { id: sent.id, recipient: 'ann@example.org', bounce: 'hard', smtp: { code: 550, enhancedCode: '5.1.1' } },
  });

  // The same report again (a sender that did not see our 250, say) changes nothing.
  const length = await streamLength(ws, sent.id);
  t.match((await offer(sent.returnPath, dsn)).response, /^250 /);
  t.equal(await streamLength(ws, sent.id), length, 'no event');
  t.equal((await suppressionsOf(ws, 'ann@example.org')).length, 1);
  t.same((await lanes(ws)).transactional, { sent: 2, bounced: 1, complained: 0 });
  await new Promise((r) => setTimeout(r, 300));
  t.equal(receiver.received.length, 1, 'no second webhook');
});

t.test('an ARF abuse report: complained, a removable suppression, the webhook, the lane; once', async (t) => {
  const { ws } = await setUp('arf.example.com');
  const receiver = await startReceiver(t);
  await h.request(ws.apiKey, 'POST', '/webhooks', { url: `${receiver.url}/hook`, eventTypes: ['email.complained'] });
  const sent = await delivered(ws, 'arf.example.com', ['cy@example.org', 'dee@example.org']);
  await eventually(async () => (await lanes(ws)).transactional.sent === 2);

  const report = arfReport({ returnPath: sent.returnPath, recipient: 'cy@example.org', original: sent.raw.toString() });
  t.match((await offer(sent.returnPath, report, 'fbl@isp.test')).response, /^250 /);

  const email = (await h.request(ws.apiKey, 'GET', `/emails/${sent.id}`)).json();
  t.equal(email.status, 'delivered', 'a complaint follows a delivery');
  t.match(email.recipients, [
    { email: 'cy@example.org', status: 'complained', reason: 'abuse' },
    { email: 'dee@example.org', status: 'delivered' },
  ]);
  t.match(email.history.at(-1), {
    type: 'EmailRecipientComplained',
    recipient: 'cy@example.org',
    detail: { feedbackType: 'abuse' },
  });
  t.same((await lanes(ws)).transactional, { sent: 2, bounced: 0, complained: 1 });
  await eventually(async () => receiver.received.length >= 1);
  t.match(JSON.parse(receiver.received[0]!.body), {
    type: 'email.complained',
    data: { id: sent.id, recipient: 'cy@example.org', feedbackType: 'abuse', stream: 'transactional' },
  });

  const [entry] = await suppressionsOf(ws, 'cy@example.org');
  t.match(entry, { email: 'cy@example.org', reason: 'complaint', removable: true });
  t.equal((await h.request(ws.apiKey, 'DELETE', `/suppressions/${entry.id}`)).statusCode, 200);

  // Offered again after the suppression was lifted: the complaint is known, nothing comes back.
  const length = await streamLength(ws, sent.id);
  t.match((await offer(sent.returnPath, report, 'fbl@isp.test')).response, /^250 /);
  t.equal(await streamLength(ws, sent.id), length, 'no event');
  t.same(await suppressionsOf(ws, 'cy@example.org'), [], 'not suppressed again');
  t.same((await lanes(ws)).transactional, { sent: 2, bounced: 0, complained: 1 });
});

t.test('a delay DSN is history only, once per report', async (t) => {
  const { ws } = await setUp('delay.example.com');
  const sent = await delivered(ws, 'delay.example.com', ['eve@example.org']);
  const dsn = postfixDsn({
    returnPath: sent.returnPath,
    returnedHeaders: headersOf(sent.raw),
    recipients: [
      {
        recipient: 'eve@example.org',
        action: 'delayed',
        status: '4.2.2',
        diagnostic: '452 4.2.2 Mailbox full',
        willRetryUntil: 'Sun, 29 Nov 2026 09:12:38 +0000',
      },
    ],
  });
  await offer(sent.returnPath, dsn);
  await offer(sent.returnPath, dsn);
  const email = (await h.request(ws.apiKey, 'GET', `/emails/${sent.id}`)).json();
  t.match(email.recipients, [{ email: 'eve@example.org', status: 'delivered' }]);
  const delays = email.history.filter((e: { type: string }) => e.type === 'EmailRecipientDelayReported');
  t.match(delays, [
    {
      recipient: 'eve@example.org',
      detail: {
        status: '4.2.2',
        diagnostic: '452 4.2.2 Mailbox full',
        reportingMta: 'relay.dest.test',
        willRetryUntil: '2026-11-29T09:12:38.000Z',
      },
    },
  ]);
  t.equal(delays.length, 1);
  t.same(await suppressionsOf(ws, 'eve@example.org'), []);
});

t.test('forged and stray reports change nothing', async (t) => {
  const { ws } = await setUp('forged.example.com');
  await setUp('stranger.example.com');
  const sent = await delivered(ws, 'forged.example.com', ['fay@example.org']);
  const length = await streamLength(ws, sent.id);
  const failure = (recipient: string) => ({
    recipient,
    action: 'failed' as const,
    status: '5.1.1',
    diagnostic: '550 5.1.1 User unknown',
  });

  t.test('refused at RCPT: no such message, another domain, not a return path', async (t) => {
    const unknown = 'em_0123456789abcdef01234567';
    t.match(await refusalOf(`${unknown}@bounces.forged.example.com`), [550, /^550 5\.1\.1 /]);
    t.match(await refusalOf(`${sent.id}@bounces.stranger.example.com`), [550], "another workspace's domain");
    t.match(await refusalOf(`${sent.id}@bounces.nowhere.test`), [550], 'a domain of nobody');
    t.match(await refusalOf(`${sent.id}@forged.example.com`), [550], 'not the return path host');
    t.match(await refusalOf(`bounce@bounces.forged.example.com`), [550], 'not an email id');
    t.equal(await refusalOf(`${sent.id}@BOUNCES.Forged.Example.COM`), null, 'the host in any case is ours');
    const question = {
      address: 'a@forged.example.com',
      mailFrom: '',
      client: { address: '127.0.0.1', helo: 'x', secure: false },
    };
    t.equal(
      await returnPathRoute(h.system.commands).claim(question, 'a@forged.example.com'),
      null,
      "a mailbox's address is another route's",
    );
    const test = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['emails:send'], mode: 'test' })).json().token;
    const quiet = await h.request(test, 'POST', '/emails', {
      from: 'a@forged.example.com',
      to: 'gil@example.org',
      subject: 'Test mode',
      text: 'Never leaves the machine.',
    });
    t.equal(quiet.statusCode, 201, 'sent in test mode');
    t.match(await refusalOf(`${quiet.json().id}@bounces.forged.example.com`), [550], 'a test-mode message');
  });

  t.test('taken and dropped: another Message-ID, a stranger, not a report', async (t) => {
    const headers = headersOf(sent.raw).replace(/^Message-ID: .*$/im, 'Message-ID: <forged@forged.example.com>');
    t.match(headers, /forged@forged/);
    const forged = postfixDsn({
      returnPath: sent.returnPath,
      returnedHeaders: headers,
      recipients: [failure('fay@example.org')],
    });
    t.match((await offer(sent.returnPath, forged)).response, /^250 /);
    const stranger = postfixDsn({
      returnPath: sent.returnPath,
      returnedHeaders: headersOf(sent.raw),
      recipients: [failure('stranger@example.org')],
    });
    t.match((await offer(sent.returnPath, stranger)).response, /^250 /);
    const complaint = arfReport({
      returnPath: sent.returnPath,
      recipient: 'fay@example.org',
      original: sent.raw.toString().replace(/^Message-ID: .*$/im, 'Message-ID: <forged@forged.example.com>'),
    });
    t.match((await offer(sent.returnPath, complaint, 'fbl@isp.test')).response, /^250 /);
    const reply = 'From: fay@example.org\r\nTo: x\r\nSubject: Re: Your receipt\r\n\r\nI am out of office.\r\n';
    t.match((await offer(sent.returnPath, reply, 'fay@example.org')).response, /^250 /, 'an auto-reply');

    t.equal(await streamLength(ws, sent.id), length, 'no event');
    t.match((await h.request(ws.apiKey, 'GET', `/emails/${sent.id}`)).json().recipients, [
      { email: 'fay@example.org', status: 'delivered' },
    ]);
    t.same(await suppressionsOf(ws, 'fay@example.org'), []);
    t.same(await suppressionsOf(ws, 'stranger@example.org'), []);
  });
});
