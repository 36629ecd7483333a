import t from 'tap';
import { decideReserveSends, monthOf, secondsToNextMonth } from '../../domain/email-quotas/decide.ts';
import type { EmailQuotaEvent } from '../../domain/email-quotas/events.ts';
import { emailQuotaAggregate } from '../../domain/email-quotas/state.ts';
import { decideAcceptEmail, decideCancelEmail, type AcceptedData } from '../../domain/emails/decide.ts';
import type { EmailEvent } from '../../domain/emails/events.ts';
import {
  checkRecipients,
  checkScheduledAt,
  parseMailbox,
  parseMailboxes,
  parseMessageId,
  RECIPIENTS_MAX,
} from '../../domain/emails/rules.ts';
import { emailAggregate, type EmailState } from '../../domain/emails/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-03-10T12:00:00.000Z';
const LATER = '2026-03-10T13:00:00.000Z';
const given = (events: EmailEvent[]): EmailState => events.reduce(emailAggregate.evolve, emailAggregate.initialState);

const accepted = (over: Partial<AcceptedData> = {}): AcceptedData => ({
  emailId: 'em_1',
  messageId: 'x@example.com',
  from: { addressId: 'addr_1', domainId: 'd1', email: 'a@example.com', name: null },
  replyTo: [],
  subject: 'Hi',
  recipients: [{ email: 'b@example.org', kind: 'to', status: 'queued', reason: null }],
  stream: 'transactional',
  tags: [],
  raw: { sha256: 'a'.repeat(64), size: 10 },
  template: null,
  signatureId: null,
  inReplyTo: null,
  scheduledAt: null,
  mode: 'live',
  source: 'api',
  acceptedAt: NOW,
  ...over,
});
const acceptedEvent = (over: Partial<AcceptedData> = {}): EmailEvent => ({
  type: 'EmailAccepted',
  data: accepted(over),
});

t.test('accept: once per stream; a repeat decides nothing', async (t) => {
  t.match(decideAcceptEmail(given([]), accepted()), [{ type: 'EmailAccepted', data: { emailId: 'em_1' } }]);
  t.same(decideAcceptEmail(given([acceptedEvent()]), accepted()), []);
});

t.test('cancel: a scheduled message before its time and before sending starts', async (t) => {
  const scheduled = acceptedEvent({ scheduledAt: LATER });
  t.same(decideCancelEmail(given([scheduled]), { now: NOW }), [
    { type: 'EmailCancelled', data: { emailId: 'em_1', cancelledAt: NOW } },
  ]);
  const cancelled = given([scheduled, { type: 'EmailCancelled', data: { emailId: 'em_1', cancelledAt: NOW } }]);
  t.same(decideCancelEmail(cancelled, { now: NOW }), [], 'cancelling again: nothing');
  t.equal(refusal(() => decideCancelEmail(given([]), { now: NOW })).code, 'resource_not_found');
  t.equal(refusal(() => decideCancelEmail(given([acceptedEvent()]), { now: NOW })).code, 'email_not_cancellable');
  t.equal(
    refusal(() => decideCancelEmail(given([scheduled]), { now: LATER })).code,
    'email_not_cancellable',
    'its time has come',
  );
  const started = given([scheduled, { type: 'EmailSendingStarted', data: { emailId: 'em_1', startedAt: NOW } }]);
  t.equal(refusal(() => decideCancelEmail(started, { now: NOW })).code, 'email_not_cancellable', 'sending started');
});

t.test('quota: grants what is left, in one reservation; nothing left decides nothing', async (t) => {
  const reserved = (events: EmailQuotaEvent[]) =>
    events.reduce(emailQuotaAggregate.evolve, emailQuotaAggregate.initialState);
  const cmd = { month: '2026-03', allowance: 10, now: NOW };
  const first = decideReserveSends(reserved([]), { ...cmd, wanted: 4 });
  t.same(first, [{ type: 'EmailQuotaReserved', data: { month: '2026-03', count: 4, used: 4, reservedAt: NOW } }]);
  const partly = decideReserveSends(reserved(first), { ...cmd, wanted: 8 });
  t.match(partly, [{ data: { count: 6, used: 10 } }], 'only the 6 left of 8');
  t.same(decideReserveSends(reserved([...first, ...partly]), { ...cmd, wanted: 1 }), [], 'the allowance is used up');
  t.same(
    decideReserveSends(reserved(first), { ...cmd, allowance: 3, wanted: 1 }),
    [],
    'an allowance lowered below use',
  );
  t.equal(monthOf(NOW), '2026-03');
  t.equal(secondsToNextMonth('2026-03-31T23:59:59.000Z'), 1);
  t.equal(secondsToNextMonth('2026-12-31T00:00:00.000Z'), 86_400, 'December rolls into January');
  t.equal(secondsToNextMonth('2026-03-31T23:59:59.500Z'), 1, 'part of a second counts as one');
});

t.test('rules: mailboxes, recipients, schedule, message ids', async (t) => {
  t.same(parseMailbox('Jane Doe <Jane@Example.COM>'), { email: 'Jane@example.com', name: 'Jane Doe' });
  t.same(parseMailbox('"Doe, Jane" <j@example.com>'), { email: 'j@example.com', name: 'Doe, Jane' });
  t.same(parseMailbox(' j@example.com '), { email: 'j@example.com', name: null });
  // An IDN domain travels in SMTP and is stored as the domains slice stores names: punycode.
  t.same(parseMailbox('Ana <ana@Bücher.example>'), { email: 'ana@xn--bcher-kva.example', name: 'Ana' });
  t.same(parseMailbox('b@xn--bcher-kva.example'), { email: 'b@xn--bcher-kva.example', name: null });
  t.equal(parseMailbox('a@bü cher.example'), null, 'a space is no IDN');
  t.equal(parseMailbox('a@bücher.example/x'), null, 'nor a slash');
  t.equal(parseMailbox('ä@example.com'), null, 'a non-ASCII local part needs SMTPUTF8, which we do not offer');
  for (const bad of [
    'j',
    'j@',
    '@example.com',
    'j@example',
    'j@@example.com',
    'a b@example.com',
    'j..k@example.com',
    `${'x'.repeat(65)}@example.com`,
  ])
    t.equal(parseMailbox(bad), null, bad);
  t.match(
    refusal(() => parseMailboxes(['a@example.com', 'nope'], 'cc')),
    { code: 'invalid_email_address', param: 'cc.1' },
  );

  const boxes = (n: number, at = 'example.com') =>
    Array.from({ length: n }, (_, i) => ({ email: `r${i}@${at}`, name: null }));
  const full = checkRecipients({
    to: boxes(RECIPIENTS_MAX - 1),
    cc: [{ email: 'R0@example.com', name: null }],
    bcc: boxes(1, 'example.org'),
  });
  t.same(
    [full.to.length, full.cc.length, full.bcc.length],
    [RECIPIENTS_MAX - 1, 0, 1],
    'a repeat ignoring case counts once',
  );
  t.match(
    refusal(() => checkRecipients({ to: boxes(RECIPIENTS_MAX), cc: [], bcc: boxes(1, 'example.org') })),
    {
      code: 'too_many_recipients',
    },
  );
  t.match(
    refusal(() => checkRecipients({ to: [], cc: [], bcc: [] })),
    { code: 'invalid_parameter', param: 'to' },
  );

  t.equal(checkScheduledAt(undefined, NOW), null);
  t.equal(checkScheduledAt('2026-03-10T11:00:00Z', NOW), null, 'a past time: at once');
  t.equal(checkScheduledAt('2026-03-10T14:00:00+01:00', NOW), LATER);
  t.match(
    refusal(() => checkScheduledAt('2026-03-10T14:00:00', NOW)),
    { code: 'invalid_parameter', param: 'scheduledAt' },
  );
  t.match(
    refusal(() => checkScheduledAt('2026-04-10T12:00:01Z', NOW)),
    { code: 'invalid_parameter' },
  );

  t.equal(parseMessageId('<abc@example.com>'), 'abc@example.com');
  t.equal(parseMessageId('abc@example.com'), 'abc@example.com');
  t.equal(parseMessageId('abc'), null);
});
