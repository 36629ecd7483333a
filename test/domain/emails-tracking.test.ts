import t from 'tap';
import {
  decideRecordEngagement,
  ENGAGEMENTS_MAX,
  USER_AGENT_MAX,
  type AcceptedData,
  type EngagementCommand,
} from '../../domain/emails/decide.ts';
import type { EmailEvent } from '../../domain/emails/events.ts';
import { emailAggregate, type EmailState } from '../../domain/emails/state.ts';
import { webhookMessageOf } from '../../domain/webhooks/catalogue.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-03-10T12:00:00.000Z';
const given = (events: EmailEvent[]): EmailState => events.reduce(emailAggregate.evolve, emailAggregate.initialState);

const accepted = (over: Partial<AcceptedData> = {}): EmailEvent => ({
  type: 'EmailAccepted',
  data: {
    emailId: 'em_1',
    messageId: 'x@example.com',
    from: { addressId: 'addr_1', domainId: 'd1', email: 'a@example.com', name: 'A' },
    replyTo: [],
    subject: 'Hi',
    recipients: [{ email: 'B@example.org', kind: 'to', status: 'queued', reason: null }],
    stream: 'broadcast',
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
  },
});
const open = (over: Partial<EngagementCommand> = {}): EngagementCommand => ({
  recipient: 'b@example.org',
  url: null,
  userAgent: 'Mail/1.0',
  at: NOW,
  ...over,
});
const engagement = {
  emailId: 'em_1',
  messageId: 'x@example.com',
  from: { addressId: 'addr_1', domainId: 'd1', email: 'a@example.com' },
  stream: 'broadcast',
  recipient: 'b@example.org',
  userAgent: 'Mail/1.0',
  at: NOW,
};

t.test('an open and a click of an accepted message, with what the message says of itself', async (t) => {
  const state = given([accepted()]);
  t.same(decideRecordEngagement(state, open()), [{ type: 'EmailOpened', data: engagement }]);
  t.same(decideRecordEngagement(state, open({ url: 'https://shop.test/a' })), [
    { type: 'EmailLinkClicked', data: { ...engagement, url: 'https://shop.test/a' } },
  ]);
  const long = decideRecordEngagement(state, open({ userAgent: 'x'.repeat(USER_AGENT_MAX + 1) }));
  t.equal((long[0]!.data as { userAgent: string }).userAgent.length, USER_AGENT_MAX, 'a User-Agent is cut');
  t.same((decideRecordEngagement(state, open({ userAgent: null }))[0]!.data as { userAgent: null }).userAgent, null);
});

t.test('only an accepted message that was not cancelled, and only its recipient', async (t) => {
  t.equal(refusal(() => decideRecordEngagement(given([]), open())).code, 'resource_not_found');
  const cancelled = given([
    accepted({ scheduledAt: '2026-03-11T00:00:00.000Z' }),
    { type: 'EmailCancelled', data: { emailId: 'em_1', cancelledAt: NOW } },
  ]);
  t.equal(refusal(() => decideRecordEngagement(cancelled, open())).code, 'resource_not_found');
  const one = given([accepted()]);
  t.equal(refusal(() => decideRecordEngagement(one, open({ recipient: 'c@example.org' }))).param, 'recipient');
  t.equal(
    refusal(() => decideRecordEngagement(one, open({ recipient: '' }))).param,
    'recipient',
    'a message to one recipient names it',
  );
});

t.test('a message to several recipients records opens and clicks of the message (recipient empty)', async (t) => {
  const several = given([
    accepted({
      recipients: [
        { email: 'b@example.org', kind: 'to', status: 'queued', reason: null },
        { email: 'c@example.org', kind: 'cc', status: 'queued', reason: null },
      ],
    }),
  ]);
  t.match(decideRecordEngagement(several, open({ recipient: '' })), [{ type: 'EmailOpened', data: { recipient: '' } }]);
  t.match(decideRecordEngagement(several, open({ recipient: 'c@example.org' })), [
    { type: 'EmailOpened', data: { recipient: 'c@example.org' } },
  ]);
});

t.test('past the count per message nothing more is recorded', async (t) => {
  const opened: EmailEvent = { type: 'EmailOpened', data: engagement } as EmailEvent;
  const full = given([accepted(), ...Array.from({ length: ENGAGEMENTS_MAX }, () => opened)]);
  t.equal(full.engagements, ENGAGEMENTS_MAX);
  t.same(decideRecordEngagement(full, open()), []);
  const almost = given([accepted(), ...Array.from({ length: ENGAGEMENTS_MAX - 1 }, () => opened)]);
  t.equal(decideRecordEngagement(almost, open({ url: 'https://shop.test/' })).length, 1);
});

t.test('webhooks: email.opened and email.clicked, narrowed by the sender', async (t) => {
  t.same(webhookMessageOf({ type: 'EmailOpened', data: engagement }, NOW), {
    type: 'email.opened',
    concerns: { address: 'a@example.com' },
    data: {
      id: 'em_1',
      messageId: 'x@example.com',
      from: 'a@example.com',
      stream: 'broadcast',
      recipient: 'b@example.org',
      userAgent: 'Mail/1.0',
      openedAt: NOW,
    },
  });
  t.match(
    webhookMessageOf({ type: 'EmailLinkClicked', data: { ...engagement, recipient: '', url: 'https://s.test/' } }, NOW),
    { type: 'email.clicked', data: { recipient: null, url: 'https://s.test/', clickedAt: NOW } },
  );
});
