import t from 'tap';
import type { EmailEvent } from '../../domain/emails/events.ts';
import {
  decideDeliveryReport,
  decideFeedbackReport,
  emailReportAggregate,
  MAX_DELAY_REPORTS,
} from '../../domain/emails/reports.ts';
import type {
  DeliveryReport,
  DeliveryStatusRecipient,
  FeedbackReport,
  OriginalMessage,
} from '../../domain/messages/reports.ts';

const NOW = '2026-01-02T00:00:00.000Z';
const from = { addressId: 'addr_1', domainId: 'dom_1', email: 'news@sender.test' };
const accepted: EmailEvent = {
  type: 'EmailAccepted',
  data: {
    emailId: 'em_1',
    messageId: 'm1@sender.test',
    from: { ...from, name: null },
    replyTo: [],
    subject: 'Hi',
    recipients: [
      { email: 'Ann@one.test', kind: 'to', status: 'queued', reason: null },
      { email: 'bo@two.test', kind: 'cc', status: 'queued', reason: null },
      { email: 'cy@one.test', kind: 'to', status: 'queued', reason: null },
      { email: 'sup@one.test', kind: 'to', status: 'suppressed', reason: 'bounce' },
    ],
    stream: 'broadcast',
    tags: [],
    raw: { sha256: 'ab', size: 1 },
    template: null,
    signatureId: null,
    inReplyTo: null,
    scheduledAt: null,
    mode: 'live',
    source: 'api',
    acceptedAt: '2026-01-01T00:00:00.000Z',
  },
};
const answer = (type: 'EmailRecipientDelivered' | 'EmailRecipientBounced', recipient: string, attempt = 1) =>
  ({
    type,
    data: {
      emailId: 'em_1',
      messageId: 'm1@sender.test',
      from,
      stream: 'broadcast',
      recipient,
      attempt,
      code: 250,
      enhancedCode: '2.0.0',
      response: '250 ok',
      mx: 'mx.one.test',
      tls: true,
      at: '2026-01-01T00:00:01.000Z',
      ...(type === 'EmailRecipientBounced' ? { bounce: 'hard' } : {}),
    },
  }) as EmailEvent;

const given = (...events: EmailEvent[]) =>
  events.reduce(emailReportAggregate.evolve, emailReportAggregate.initialState);
/** Ann delivered on the second attempt, Bo delivered, Cy still waiting. */
const sent = () =>
  given(
    accepted,
    answer('EmailRecipientDelivered', 'Ann@one.test', 2),
    answer('EmailRecipientDelivered', 'bo@two.test'),
  );

const original = (messageId: string | null = 'm1@sender.test'): OriginalMessage => ({
  messageId,
  from: 'news@sender.test',
  to: ['ann@one.test'],
  subject: 'Hi',
});
const block = (over: Partial<DeliveryStatusRecipient>): DeliveryStatusRecipient => ({
  finalRecipient: 'ann@one.test',
  originalRecipient: null,
  action: 'failed',
  status: '5.1.1',
  statusClass: 'permanent',
  diagnostic: '550 5.1.1 <ann@one.test>: User unknown',
  remoteMta: 'mx2.one.test',
  lastAttemptDate: null,
  willRetryUntil: null,
  ...over,
});
const dsn = (recipients: DeliveryStatusRecipient[], messageId?: string | null): DeliveryReport => ({
  kind: 'delivery-status',
  reportingMta: 'relay.one.test',
  originalEnvelopeId: null,
  arrivalDate: null,
  original: original(messageId),
  recipients,
});
const arf = (over: Partial<FeedbackReport> = {}): FeedbackReport => ({
  kind: 'feedback',
  feedbackType: 'abuse',
  complaint: true,
  userAgent: null,
  version: '1',
  originalMailFrom: 'em_1@bounces.sender.test',
  recipients: ['ann@one.test'],
  arrivalDate: null,
  sourceIp: null,
  reportingMta: null,
  reportedDomains: [],
  reportedUris: [],
  authenticationResults: null,
  incidents: 1,
  original: original(),
  ...over,
});

t.test('a permanent failure of a delivered recipient is a hard bounce from the DSN', async (t) => {
  const events = decideDeliveryReport(sent(), { report: dsn([block({})]), reportId: 'r1', now: NOW });
  t.same(events, [
    {
      type: 'EmailRecipientBounced',
      data: {
        emailId: 'em_1',
        messageId: 'm1@sender.test',
        from,
        stream: 'broadcast',
        recipient: 'Ann@one.test',
        attempt: 2,
        code: 550,
        enhancedCode: '5.1.1',
        response: '550 5.1.1 <ann@one.test>: User unknown',
        mx: 'mx2.one.test',
        tls: null,
        at: NOW,
        bounce: 'hard',
        source: 'dsn',
      },
    },
  ]);
  const again = given(accepted, answer('EmailRecipientDelivered', 'Ann@one.test'), ...events);
  t.same(decideDeliveryReport(again, { report: dsn([block({})]), reportId: 'r1', now: NOW }), [], 'once only');
});

t.test('what a DSN decides nothing about', async (t) => {
  const decide = (report: DeliveryReport, state = sent()) =>
    decideDeliveryReport(state, { report, reportId: 'r', now: NOW });
  t.same(decide(dsn([block({})], 'other@sender.test')), [], 'another Message-ID: not our message');
  t.same(decide(dsn([block({ finalRecipient: 'stranger@one.test' })])), [], 'a recipient we did not send to');
  t.same(decide(dsn([block({ finalRecipient: 'cy@one.test' })])), [], 'not delivered yet');
  t.same(decide(dsn([block({ finalRecipient: 'sup@one.test' })])), [], 'suppressed at acceptance');
  t.same(
    decide(dsn([block({ action: 'delivered', status: '2.0.0', statusClass: 'success' })])),
    [],
    'a success notice',
  );
  t.same(
    decide(dsn([block({})]), given(accepted, answer('EmailRecipientBounced', 'Ann@one.test'))),
    [],
    'bounced already',
  );
  t.same(decide(dsn([block({})]), emailReportAggregate.initialState), [], 'no such message');
});

t.test('matching: the original recipient, a missing Message-ID, one block per recipient', async (t) => {
  const forwarded = block({ finalRecipient: 'ann@elsewhere.test', originalRecipient: 'ANN@one.test' });
  t.match(decideDeliveryReport(sent(), { report: dsn([forwarded, block({})], null), reportId: 'r', now: NOW }), [
    { type: 'EmailRecipientBounced', data: { recipient: 'Ann@one.test' } },
  ]);
  t.equal(
    decideDeliveryReport(sent(), { report: dsn([forwarded, block({})], null), reportId: 'r', now: NOW }).length,
    1,
  );
});

t.test('a hop that gave up on a transient failure: an expiry, no suppression kind', async (t) => {
  const report = dsn([block({ status: '4.4.7', statusClass: 'transient', diagnostic: null })]);
  t.match(decideDeliveryReport(sent(), { report, reportId: 'r', now: NOW }), [
    {
      type: 'EmailRecipientBounced',
      data: { bounce: 'expired', enhancedCode: '4.4.7', code: null, response: 'The delivery failed (4.4.7).' },
    },
  ]);
});

t.test('a delay is recorded once per report, at most MAX_DELAY_REPORTS per recipient', async (t) => {
  const delayed = dsn([
    block({
      action: 'delayed',
      status: '4.2.2',
      statusClass: 'transient',
      diagnostic: '452 4.2.2 Mailbox full',
      willRetryUntil: '2026-01-05T00:00:00.000Z',
    }),
  ]);
  const events = decideDeliveryReport(sent(), { report: delayed, reportId: 'r1', now: NOW });
  t.match(events, [
    {
      type: 'EmailRecipientDelayReported',
      data: {
        recipient: 'Ann@one.test',
        reportId: 'r1',
        status: '4.2.2',
        diagnostic: '452 4.2.2 Mailbox full',
        reportingMta: 'relay.one.test',
        willRetryUntil: '2026-01-05T00:00:00.000Z',
      },
    },
  ]);
  let state = given(accepted, answer('EmailRecipientDelivered', 'Ann@one.test'), ...events);
  t.same(decideDeliveryReport(state, { report: delayed, reportId: 'r1', now: NOW }), [], 'the same report again');
  for (let i = 2; i <= MAX_DELAY_REPORTS; i++)
    state = decideDeliveryReport(state, { report: delayed, reportId: `r${i}`, now: NOW }).reduce(
      emailReportAggregate.evolve,
      state,
    );
  t.equal(state.recipients['ann@one.test']!.delays.length, MAX_DELAY_REPORTS);
  t.same(decideDeliveryReport(state, { report: delayed, reportId: 'r-more', now: NOW }), [], 'past the cap');
  t.match(
    decideDeliveryReport(state, { report: dsn([block({})]), reportId: 'r-fail', now: NOW }),
    [{ type: 'EmailRecipientBounced' }],
    'a failure after delays still bounces',
  );
});

t.test('an abuse report is a complaint of the recipient it names, once', async (t) => {
  const events = decideFeedbackReport(sent(), { report: arf(), now: NOW });
  t.same(events, [
    {
      type: 'EmailRecipientComplained',
      data: {
        emailId: 'em_1',
        messageId: 'm1@sender.test',
        from,
        stream: 'broadcast',
        recipient: 'Ann@one.test',
        feedbackType: 'abuse',
        at: NOW,
      },
    },
  ]);
  const state = events.reduce(emailReportAggregate.evolve, sent());
  t.same(decideFeedbackReport(state, { report: arf(), now: NOW }), [], 'the same report again');
});

t.test('feedback that is no complaint, or about something else, decides nothing', async (t) => {
  const decide = (report: FeedbackReport, state = sent()) => decideFeedbackReport(state, { report, now: NOW });
  t.same(decide(arf({ feedbackType: 'not-spam', complaint: false })), []);
  t.same(decide(arf({ original: original('other@sender.test') })), [], 'another Message-ID');
  t.same(decide(arf({ recipients: ['cy@one.test'] })), [], 'not delivered');
  t.same(decide(arf({ recipients: ['redacted@isp.test'] })), [], 'redacted, and two recipients were delivered');
  const one = given(accepted, answer('EmailRecipientDelivered', 'bo@two.test'));
  t.match(
    decide(arf({ recipients: ['redacted@isp.test'] }), one),
    [{ type: 'EmailRecipientComplained', data: { recipient: 'bo@two.test' } }],
    'redacted, and one recipient was delivered: that one',
  );
  t.match(decide(arf({ recipients: [], feedbackType: 'fraud' }), one), [
    { type: 'EmailRecipientComplained', data: { feedbackType: 'fraud' } },
  ]);
});
