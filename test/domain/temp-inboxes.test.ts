import t from 'tap';
import {
  decideCreateTempInbox,
  decideExpireTempInbox,
  decideReceiveTempMail,
  decideTakeAllowance,
  TempInboxRateLimited,
} from '../../domain/temp-inboxes/decide.ts';
import type { TempInboxEvent } from '../../domain/temp-inboxes/events.ts';
import { networkOf, TEMP_INBOX_MESSAGES_MAX } from '../../domain/temp-inboxes/rules.ts';
import { tempInboxAggregate, tempInboxAllowanceAggregate } from '../../domain/temp-inboxes/state.ts';
import { arrivingMessage } from '../support/inbound.ts';
import { refusal } from '../support/refusal.ts';

const given = (events: TempInboxEvent[]) => events.reduce(tempInboxAggregate.evolve, tempInboxAggregate.initialState);
const T0 = '2026-01-01T10:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(T0) + ms).toISOString();

t.test('networks: IPv4 by /24, IPv6 by /56, mapped IPv4 as IPv4', async (t) => {
  t.equal(networkOf('198.51.100.7'), '198.51.100.0/24');
  t.equal(networkOf('::ffff:198.51.100.200'), '198.51.100.0/24');
  t.equal(networkOf('2001:db8:1:23ab::1'), '2001:db8:1:2300::/56');
  t.equal(networkOf('2001:db8:1:23ff:ffff:ffff:ffff:ffff'), '2001:db8:1:2300::/56');
  t.equal(networkOf('2001:db8:1:2400::1'), '2001:db8:1:2400::/56');
  t.equal(networkOf('::1'), '0:0:0:0::/56');
  t.equal(networkOf('fe80::1%eth0'), 'fe80:0:0:0::/56');
  t.equal(networkOf('300.1.1.1'), null);
  t.equal(networkOf('1:2:3'), null);
  t.equal(networkOf('not an address'), null);
});

t.test('the allowance: 10 in any 10 minutes, the 11th refused with the wait until the oldest leaves', async (t) => {
  let state = tempInboxAllowanceAggregate.initialState;
  for (let i = 0; i < 10; i++) {
    const events = decideTakeAllowance(state, { network: 'n', inboxId: `tin_${i}`, now: at(i * 1000) });
    t.equal(events.length, 1);
    state = events.reduce(tempInboxAllowanceAggregate.evolve, state);
  }
  const refused = refusal(() => decideTakeAllowance(state, { network: 'n', inboxId: 'x', now: at(60_000) }));
  t.ok(refused instanceof TempInboxRateLimited);
  t.equal(refused.code, 'temp_inbox_rate_limited');
  t.equal(refused.retryAfterSeconds, 540, 'the first of the ten leaves the window at 10:10:00');
  t.equal(decideTakeAllowance(state, { network: 'n', inboxId: 'x', now: at(600_000) }).length, 1, 'then one more');
});

t.test('an inbox lives its lifetime, keeps mail once per Message-ID, and expires at its time', async (t) => {
  const [created] = decideCreateTempInbox(tempInboxAggregate.initialState, {
    inboxId: 'tin_1',
    address: 'a@temp.test',
    tokenHash: 'h',
    now: T0,
    lifetimeMs: 3_600_000,
  });
  t.match(created, { type: 'TempInboxCreated', data: { expiresAt: at(3_600_000) } });
  t.same(
    decideCreateTempInbox(given([created!]), {
      inboxId: 'tin_1',
      address: 'a',
      tokenHash: 'h',
      now: T0,
      lifetimeMs: 1,
    }),
    [],
  );
  const { summary } = arrivingMessage('m1@outside.test');
  const mail = {
    inboxId: 'tin_1',
    messageId: 'tim_1',
    mailFrom: 'o@outside.test',
    raw: { sha256: 'a', size: 1 },
    summary,
  };
  const [received] = decideReceiveTempMail(given([created!]), { ...mail, now: at(1000) });
  t.equal(received!.type, 'TempInboxMessageReceived');
  t.same(decideReceiveTempMail(given([created!, received!]), { ...mail, messageId: 'tim_2', now: at(2000) }), []);
  t.equal(
    refusal(() => decideReceiveTempMail(given([created!]), { ...mail, now: at(3_600_000) })).code,
    'temp_inbox_not_found',
    'not at its expiry',
  );
  t.equal(refusal(() => decideReceiveTempMail(given([]), { ...mail, now: T0 })).code, 'temp_inbox_not_found');
  const full = { ...given([created!]), messages: TEMP_INBOX_MESSAGES_MAX };
  t.equal(refusal(() => decideReceiveTempMail(full, { ...mail, now: at(1000) })).code, 'temp_inbox_full');
  t.same(decideExpireTempInbox(given([created!]), { inboxId: 'tin_1', now: at(3_599_999) }), [], 'not before its time');
  const [expired] = decideExpireTempInbox(given([created!]), { inboxId: 'tin_1', now: at(3_600_000) });
  t.equal(expired!.type, 'TempInboxExpired');
  t.same(decideExpireTempInbox(given([created!, expired!]), { inboxId: 'tin_1', now: at(3_700_000) }), [], 'once');
  t.equal(
    refusal(() => decideReceiveTempMail(given([created!, expired!]), { ...mail, now: at(1000) })).code,
    'temp_inbox_not_found',
  );
});
