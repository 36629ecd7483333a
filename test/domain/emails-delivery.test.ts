import t from 'tap';
import {
  decideAttemptOutcomes,
  decideStartSending,
  emailDeliveryAggregate,
  openRecipients,
  recipientDomains,
  type AttemptAnswer,
} from '../../domain/emails/delivery.ts';
import type { EmailEvent } from '../../domain/emails/events.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const from = { addressId: 'addr_1', domainId: 'dom_1', email: 'news@sender.test', name: null };
const accepted = (overrides: Partial<Extract<EmailEvent, { type: 'EmailAccepted' }>['data']> = {}): EmailEvent => ({
  type: 'EmailAccepted',
  data: {
    emailId: 'em_1',
    messageId: 'm1@sender.test',
    from,
    replyTo: [],
    subject: 'Hi',
    recipients: [
      { email: 'a@one.test', kind: 'to', status: 'queued', reason: null },
      { email: 'b@two.test', kind: 'cc', status: 'queued', reason: null },
      { email: 'c@one.test', kind: 'bcc', status: 'queued', reason: null },
      { email: 'd@one.test', kind: 'to', status: 'suppressed', reason: 'bounce' },
    ],
    stream: 'transactional',
    tags: [],
    raw: { sha256: 'ab', size: 1 },
    template: null,
    signatureId: null,
    inReplyTo: null,
    scheduledAt: null,
    mode: 'live',
    source: 'api',
    acceptedAt: NOW,
    ...overrides,
  },
});
const given = (events: EmailEvent[]) =>
  events.reduce(emailDeliveryAggregate.evolve, emailDeliveryAggregate.initialState);
const answer = (recipient: string, status: AttemptAnswer['status'], code: number | null): AttemptAnswer => ({
  recipient,
  status,
  code,
  enhancedCode: null,
  response: `${code} words`,
  mx: 'mx.one.test',
  tls: true,
});
const at = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();
const schedule = { delaysMs: [1000], intervalMs: 5000, lifetimeMs: 10_000 };

t.test('recipients: queued ones by domain; suppressed ones never', async (t) => {
  const s = given([accepted()]);
  t.same(recipientDomains(accepted().data as never), ['one.test', 'two.test']);
  t.same(openRecipients(s, 'one.test'), ['a@one.test', 'c@one.test']);
});

t.test('start: once, not after a cancel, carrying the sender for webhooks', async (t) => {
  const started = decideStartSending(given([accepted()]), { now: NOW });
  t.match(started, [
    {
      type: 'EmailSendingStarted',
      data: { emailId: 'em_1', messageId: 'm1@sender.test', from: { email: from.email } },
    },
  ]);
  t.same(decideStartSending(given([accepted(), ...started]), { now: NOW }), []);
  t.same(
    decideStartSending(given([accepted(), { type: 'EmailCancelled', data: { emailId: 'em_1', cancelledAt: NOW } }]), {
      now: NOW,
    }),
    [],
  );
  t.same(decideStartSending(given([]), { now: NOW }), []);
});

t.test('answers: delivered, hard bounce, deferral on the schedule, expiry past the lifetime', async (t) => {
  const s = given([accepted()]);
  const first = decideAttemptOutcomes(s, {
    answers: [
      answer('a@one.test', 'delivered', 250),
      answer('b@two.test', 'bounced', 550),
      answer('c@one.test', 'deferred', 451),
    ],
    now: at(0),
    schedule,
  });
  t.match(first, [
    {
      type: 'EmailRecipientDelivered',
      data: { recipient: 'a@one.test', attempt: 1, code: 250, stream: 'transactional' },
    },
    { type: 'EmailRecipientBounced', data: { recipient: 'b@two.test', bounce: 'hard' } },
    { type: 'EmailRecipientDeferred', data: { recipient: 'c@one.test', attempt: 1, nextAttemptAt: at(1000) } },
  ]);
  const after = given([accepted(), ...first]);
  t.same(openRecipients(after, 'one.test'), ['c@one.test']);
  t.same(
    decideAttemptOutcomes(after, { answers: [answer('a@one.test', 'delivered', 250)], now: at(1), schedule }),
    [],
    'a settled recipient is not answered twice',
  );
  const late = decideAttemptOutcomes(after, {
    answers: [answer('c@one.test', 'deferred', 451)],
    now: at(10_000),
    schedule,
  });
  t.match(late, [
    { type: 'EmailRecipientBounced', data: { attempt: 2, bounce: 'expired', enhancedCode: '4.4.7', code: 451 } },
  ]);
});

t.test('the lifetime counts from the scheduled time', async (t) => {
  const s = given([accepted({ scheduledAt: at(60_000) })]);
  const events = decideAttemptOutcomes(s, {
    answers: [answer('a@one.test', 'deferred', 421)],
    now: at(65_000),
    schedule,
  });
  t.match(events, [{ type: 'EmailRecipientDeferred', data: { nextAttemptAt: at(66_000) } }]);
});
