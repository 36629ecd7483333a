import { simpleParser } from 'mailparser';
import t from 'tap';
import { emailDeliveryAggregate } from '../../domain/emails/delivery.ts';
import { WrongExpectedRevision } from '../../infra/eventstore/port.ts';
import { loadState } from '../../commands/execute.ts';
import { startDomainsApp } from '../support/domains.ts';
import {
  acceptEmail,
  eventsWhen,
  FAST_RETRY,
  outcomes,
  sendingWorkspace,
  settled,
  type Sender,
} from '../support/delivery.ts';
import { sharedFreePort, startMxServer, type MxServer } from '../support/mx-server.ts';
import { verifyDkim } from '../support/outbound.ts';
import { eventually, startReceiver } from '../support/receiver.ts';

/** One loopback address per recipient domain: each its own MX host, so sessions and behaviours stay apart. */
const HOSTS = {
  ok: '127.0.0.1',
  tls: '127.0.0.2',
  grey: '127.0.0.3',
  refused: '127.0.0.4',
  slow: '127.0.0.5',
  bounce: '127.0.0.6',
  race: '127.0.0.7',
} as const;
type Host = keyof typeof HOSTS;

const port = await sharedFreePort(Object.values(HOSTS));
const { h, dns } = await startDomainsApp(t, {
  outbound: { mxPort: port, mxAllowPrivate: true, heloName: 'mta.mail.test' },
  // Lifetime 1.5 s: a refused connection expires after five or six attempts, not ten.
  emailDelivery: { pollMs: 20, retry: { ...FAST_RETRY, lifetimeMs: 1_500 }, retryOnErrorMs: 200 },
  webhooks: { allowPrivate: true, pollMs: 20, retryScheduleMs: [50, 50] },
});
for (const [name, address] of Object.entries(HOSTS)) {
  dns.set(`${name}.test`, { MX: [{ exchange: `mx.${name}.test`, priority: 10 }] });
  dns.set(`mx.${name}.test`, { A: [address] });
}
const mx = (name: Host, behaviour: Parameters<typeof startMxServer>[3] = {}) =>
  startMxServer(t, HOSTS[name], port, behaviour);
const servers: Partial<Record<Host, MxServer>> = {
  ok: await mx('ok'),
  tls: await mx('tls', { starttls: true }),
  grey: await mx('grey', { data: (n) => (n === 1 ? { code: 451, message: '4.7.1 Greylisted, try again' } : null) }),
  slow: await mx('slow', { dataDelayMs: 1_500 }),
  bounce: await mx('bounce', {
    rcpt: (address) => (address.startsWith('gone@') ? { code: 550, message: '5.1.1 No such user' } : null),
  }),
  race: await mx('race'),
};
let domains = 0;
const sender = async (): Promise<Sender> => sendingWorkspace(h, dns, `sender${++domains}.example.com`);

t.test('250: taken in hand once, signed with the domain key, delivered; webhooks say sent and delivered', async (t) => {
  const s = await sender();
  const receiver = await startReceiver(t);
  const hook = await h.request(s.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/hook`,
    eventTypes: ['email.*'],
    addressAllowlist: [s.email],
  });
  t.equal(hook.statusCode, 201, hook.body);
  const { emailId, messageId, stream } = await acceptEmail(h.system, s, {
    to: ['ann@ok.test', 'bob@ok.test'],
    suppressed: ['old@ok.test'],
  });
  const events = await eventsWhen(h.system, stream, settled(2));
  t.same(
    events.map((e) => e.type),
    ['EmailAccepted', 'EmailSendingStarted', 'EmailRecipientDelivered', 'EmailRecipientDelivered'],
  );
  t.match(events[1]?.data, { emailId, messageId: messageId.slice(1, -1), from: { email: s.email } });
  t.same(outcomes(events), [
    ['Delivered', 'ann@ok.test', 1, 250],
    ['Delivered', 'bob@ok.test', 1, 250],
  ]);
  t.match(events[2]?.data, { mx: 'mx.ok.test', tls: false, stream: 'transactional', response: /^250 / });

  const received = servers.ok!.received.filter((r) => r.raw.includes(emailId));
  t.equal(received.length, 1, 'one session for both recipients on the domain');
  t.same(received[0]?.rcptTo, ['ann@ok.test', 'bob@ok.test'], 'the suppressed recipient is never attempted');
  t.equal(received[0]?.mailFrom, `${emailId}@bounces.${s.domain}`, 'the return path on the domain bounce host');
  const mail = await simpleParser(received[0]!.raw);
  t.equal(mail.messageId, messageId);
  const [dkim] = await verifyDkim(dns, received[0]!.raw);
  t.equal(dkim?.status.result, 'pass', 'DKIM verifies against the key the domain published');
  t.equal(dkim?.signingDomain, s.domain);

  await eventually(async () => receiver.received.length >= 3);
  const types = receiver.received.map((r) => JSON.parse(r.body)).map((b) => [b.type, b.data.id, b.data.recipient]);
  t.same(types.sort(), [
    ['email.delivered', emailId, 'ann@ok.test'],
    ['email.delivered', emailId, 'bob@ok.test'],
    ['email.sent', emailId, undefined],
  ]);
});

t.test('a webhook narrowed to another address hears nothing of the message', async (t) => {
  const s = await sender();
  const receiver = await startReceiver(t);
  await h.request(s.apiKey, 'POST', '/webhooks', {
    url: `${receiver.url}/other`,
    eventTypes: ['email.*'],
    addressAllowlist: [`other@${s.domain}`],
  });
  const { stream } = await acceptEmail(h.system, s, { to: ['cy@ok.test'] });
  await eventsWhen(h.system, stream, settled(1));
  await new Promise((r) => setTimeout(r, 300));
  t.equal(receiver.received.length, 0);
});

t.test('test mode never leaves the machine', async (t) => {
  const s = await sender();
  const { emailId, stream } = await acceptEmail(h.system, s, { to: ['dan@ok.test'], mode: 'test' });
  await new Promise((r) => setTimeout(r, 500));
  t.same(
    (await h.system.store.readStream(stream)).map((e) => e.type),
    ['EmailAccepted'],
  );
  t.notOk(servers.ok!.received.some((r) => r.raw.includes(emailId)));
});

t.test('STARTTLS offered: the session is encrypted; recipients on two domains are two sessions', async (t) => {
  const s = await sender();
  const { emailId, stream } = await acceptEmail(h.system, s, { to: ['eve@tls.test', 'fay@ok.test'] });
  const events = await eventsWhen(h.system, stream, settled(2));
  t.equal(events.filter((e) => e.type === 'EmailSendingStarted').length, 1, 'taken in hand once');
  const byRecipient = Object.fromEntries(events.slice(2).map((e) => [e.data.recipient, e.data]));
  t.match(byRecipient['eve@tls.test'], { code: 250, tls: true, mx: 'mx.tls.test' });
  t.match(byRecipient['fay@ok.test'], { code: 250, tls: false, mx: 'mx.ok.test' });
  t.equal(servers.tls!.received.find((r) => r.raw.includes(emailId))?.secure, true);
  t.equal(servers.ok!.received.find((r) => r.raw.includes(emailId))?.secure, false);
});

t.test('4xx, then 250 on the retry the schedule set; the webhook says delivery_delayed', async (t) => {
  const s = await sender();
  const receiver = await startReceiver(t);
  await h.request(s.apiKey, 'POST', '/webhooks', { url: `${receiver.url}/d`, eventTypes: ['email.delivery_delayed'] });
  const { emailId, stream } = await acceptEmail(h.system, s, { to: ['gus@grey.test'] });
  const events = await eventsWhen(h.system, stream, settled(1));
  t.same(outcomes(events), [
    ['Deferred', 'gus@grey.test', 1, 451],
    ['Delivered', 'gus@grey.test', 2, 250],
  ]);
  const deferred = events.find((e) => e.type === 'EmailRecipientDeferred')!;
  t.match(deferred.data, { enhancedCode: '4.7.1', response: /Greylisted/ });
  t.equal(Date.parse(deferred.data.nextAttemptAt as string) - Date.parse(deferred.data.at as string), 300);
  t.ok(events.at(-1)!.recordedAt.getTime() >= Date.parse(deferred.data.nextAttemptAt as string), 'not before its time');
  await eventually(async () => receiver.received.length >= 1);
  t.match(JSON.parse(receiver.received[0]!.body), {
    type: 'email.delivery_delayed',
    data: { id: emailId, recipient: 'gus@grey.test', smtp: { code: 451 }, nextAttemptAt: deferred.data.nextAttemptAt },
  });
});

t.test('5xx: the recipient bounces at once, gets a bounce suppression; the other one is delivered', async (t) => {
  const s = await sender();
  const receiver = await startReceiver(t);
  await h.request(s.apiKey, 'POST', '/webhooks', { url: `${receiver.url}/b`, eventTypes: ['email.bounced'] });
  const { emailId, stream } = await acceptEmail(h.system, s, { to: ['gone@bounce.test', 'here@bounce.test'] });
  const events = await eventsWhen(h.system, stream, settled(2));
  t.same(outcomes(events), [
    ['Bounced', 'gone@bounce.test', 1, 550],
    ['Delivered', 'here@bounce.test', 1, 250],
  ]);
  t.match(events.find((e) => e.type === 'EmailRecipientBounced')?.data, { bounce: 'hard', enhancedCode: '5.1.1' });
  const list = await h.request(s.apiKey, 'GET', '/suppressions?q=gone@bounce.test');
  t.match(list.json().data, [{ email: 'gone@bounce.test', reason: 'bounce' }]);
  const removed = await h.request(s.apiKey, 'DELETE', `/suppressions/${list.json().data[0].id}`);
  t.equal(removed.json().error.code, 'suppression_not_removable');
  await eventually(async () => receiver.received.length >= 1);
  t.match(JSON.parse(receiver.received[0]!.body), {
    type: 'email.bounced',
    data: { id: emailId, recipient: 'gone@bounce.test', bounce: 'hard', smtp: { code: 550 } },
  });
});

t.test('connection refused: deferred on schedule, then bounced as expired past the lifetime', async (t) => {
  const s = await sender();
  const { stream } = await acceptEmail(h.system, s, { to: ['hal@refused.test'] });
  const events = await eventsWhen(h.system, stream, settled(1), 20_000);
  const answers = events.filter((e) => e.type.startsWith('EmailRecipient'));
  t.ok(answers.length >= 3, `several attempts (${answers.length})`);
  for (const deferred of answers.slice(0, -1))
    t.match(deferred, { type: 'EmailRecipientDeferred', data: { code: null, enhancedCode: '4.4.1' } });
  t.match(answers.at(-1), { type: 'EmailRecipientBounced', data: { bounce: 'expired', enhancedCode: '4.4.7' } });
  t.same(
    answers.map((e) => e.data.attempt),
    answers.map((_, i) => i + 1),
  );
  const list = await h.request(s.apiKey, 'GET', '/suppressions?q=hal@refused.test');
  t.same(list.json().data, [], 'an expiry is no hard bounce: no suppression');
});

t.test('a slow server holds up only its own domain', async (t) => {
  const s = await sender();
  const slow = await acceptEmail(h.system, s, { to: ['ida@slow.test'] });
  const fast = await acceptEmail(h.system, s, { to: ['jay@ok.test'] });
  const fastEvents = await eventsWhen(h.system, fast.stream, settled(1));
  t.notOk(settled(1)(await h.system.store.readStream(slow.stream)), 'the slow one is still out');
  const slowEvents = await eventsWhen(h.system, slow.stream, settled(1));
  t.match(slowEvents.at(-1), { type: 'EmailRecipientDelivered', data: { code: 250 } });
  t.ok(slowEvents.at(-1)!.recordedAt > fastEvents.at(-1)!.recordedAt);
});

t.test('a scheduled message waits for its time; a cancel racing the first attempt wins or loses whole', async (t) => {
  const s = await sender();
  const early = Date.now();
  const scheduled = await acceptEmail(h.system, s, {
    to: ['kim@race.test'],
    scheduledAt: new Date(early + 800).toISOString(),
  });
  const events = await eventsWhen(h.system, scheduled.stream, settled(1));
  t.ok(events[1]!.recordedAt.getTime() >= early + 800, 'nothing before scheduledAt');

  const results = await Promise.all(
    Array.from({ length: 8 }, async (_, i) => {
      const at = Date.now() + 300;
      const m = await acceptEmail(h.system, s, {
        to: [`race${i}@race.test`],
        scheduledAt: new Date(at).toISOString(),
      });
      await new Promise((r) => setTimeout(r, Math.max(0, at - Date.now() - 60 + i * 40)));
      // The cancel command's way: decide on the state read, append with its revision.
      const { state, revision } = await loadState(h.system.commands, m.stream, emailDeliveryAggregate);
      let cancelled = false;
      if (!state.started) {
        try {
          await h.system.store.append(
            m.stream,
            [
              {
                type: 'EmailCancelled',
                version: 1,
                data: { emailId: m.emailId, cancelledAt: new Date().toISOString() },
                // As the command writes it: the emails read model keys its rows by the workspace.
                metadata: { workspaceId: s.workspaceId, actor: { kind: 'system', id: null }, requestId: null },
              },
            ],
            revision,
          );
          cancelled = true;
        } catch (error) {
          if (!(error instanceof WrongExpectedRevision)) throw error;
        }
      }
      return { ...m, cancelled };
    }),
  );
  await new Promise((r) => setTimeout(r, 1_000));
  for (const m of results) {
    const types = (await h.system.store.readStream(m.stream)).map((e) => e.type);
    const arrived = servers.race!.received.some((r) => r.raw.includes(m.emailId));
    if (m.cancelled) {
      t.same(types, ['EmailAccepted', 'EmailCancelled'], `${m.emailId}: cancelled, nothing went out`);
      t.notOk(arrived);
    } else {
      t.same(types, ['EmailAccepted', 'EmailSendingStarted', 'EmailRecipientDelivered'], `${m.emailId}: sent`);
      t.ok(arrived);
    }
  }
  t.comment(`cancelled ${results.filter((m) => m.cancelled).length} of ${results.length}`);
});

t.test(
  'a hard bounce whose suppression fails is tried again in seconds; the delivered one is not sent twice',
  async (t) => {
    const s = await sender();
    const pool = h.system.database.pool;
    // PostgreSQL refuses the suppression's append until the trigger goes: a real failure, no mock.
    const fn = `refuse_suppression_${domains}`;
    // A sequence counts the refusals: nextval outlives the rollback the exception causes.
    await pool.query(`CREATE SEQUENCE ${fn}`);
    await pool.query(
      `CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM nextval('${fn}'); RAISE EXCEPTION 'refused for the test'; END $$`,
    );
    await pool.query(
      `CREATE TRIGGER ${fn} BEFORE INSERT ON es_events FOR EACH ROW
     WHEN (NEW.stream_id LIKE '%.suppression-gone@bounce.test') EXECUTE FUNCTION ${fn}()`,
    );
    t.teardown(async () => {
      await pool.query(`DROP TRIGGER IF EXISTS ${fn} ON es_events`);
      await pool.query(`DROP FUNCTION IF EXISTS ${fn}()`);
      await pool.query(`DROP SEQUENCE IF EXISTS ${fn}`);
    });
    const { emailId, stream } = await acceptEmail(h.system, s, { to: ['gone@bounce.test', 'here2@bounce.test'] });
    await eventually(async () => (await pool.query(`SELECT is_called FROM ${fn}`)).rows[0].is_called);
    await pool.query(`DROP TRIGGER ${fn} ON es_events`);
    const freed = Date.now();
    const events = await eventsWhen(h.system, stream, settled(2), 20_000);
    t.ok(Date.now() - freed < 10_000, `settled ${Date.now() - freed} ms after the failure ended`);
    t.match(events.find((e) => e.type === 'EmailRecipientBounced')?.data, {
      recipient: 'gone@bounce.test',
      bounce: 'hard',
    });
    const list = await h.request(s.apiKey, 'GET', '/suppressions?q=gone@bounce.test');
    t.match(list.json().data, [{ email: 'gone@bounce.test', reason: 'bounce' }]);
    t.equal(servers.bounce!.received.filter((r) => r.raw.includes(emailId)).length, 1, 'here2 got the message once');
  },
);
