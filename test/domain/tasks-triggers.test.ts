import t from 'tap';
import type { MailTrigger, ScheduleTrigger } from '../../domain/tasks/events.ts';
import { mailStartsRun } from '../../domain/tasks/mail.ts';
import { cronPattern, EVERY_DAY, nextRunAfter } from '../../domain/tasks/schedule.ts';

const daily: ScheduleTrigger = {
  kind: 'schedule',
  cadence: 'daily',
  everyHours: 1,
  hour: 8,
  minute: 0,
  weekdays: EVERY_DAY,
  monthDay: 1,
  timezone: 'UTC',
};

/** The next `n` instants of a schedule after `from`. */
function runs(trigger: ScheduleTrigger, from: string, n: number): string[] {
  const out: string[] = [];
  let at = new Date(from);
  for (let i = 0; i < n; i++) {
    at = nextRunAfter(trigger, at) ?? new Date(Number.NaN);
    out.push(at.toISOString());
  }
  return out;
}

t.test('cadences as cron patterns', async (t) => {
  t.equal(cronPattern({ ...daily, cadence: 'hourly', everyHours: 1, minute: 15 }), '15 * * * *');
  t.equal(cronPattern({ ...daily, cadence: 'hourly', everyHours: 6, weekdays: [1, 5] }), '0 */6 * * 1,5');
  t.equal(cronPattern({ ...daily, hour: 17, minute: 30, weekdays: [1, 2, 3, 4, 5] }), '30 17 * * 1,2,3,4,5');
  t.equal(
    cronPattern({ ...daily, cadence: 'monthly', monthDay: 28, weekdays: [1] }),
    '0 8 28 * *',
    'monthly ignores weekdays',
  );
});

t.test('daily on weekdays; hourly every N hours from local midnight; monthly on its day', async (t) => {
  // 2026-03-06 is a Friday.
  t.same(runs({ ...daily, weekdays: [1, 5] }, '2026-03-06T09:00:00Z', 3), [
    '2026-03-09T08:00:00.000Z',
    '2026-03-13T08:00:00.000Z',
    '2026-03-16T08:00:00.000Z',
  ]);
  t.same(
    runs({ ...daily, cadence: 'hourly', everyHours: 5, minute: 10 }, '2026-03-06T19:00:00Z', 3),
    ['2026-03-06T20:10:00.000Z', '2026-03-07T00:10:00.000Z', '2026-03-07T05:10:00.000Z'],
    'the count starts again at midnight',
  );
  t.same(runs({ ...daily, cadence: 'monthly', monthDay: 28, hour: 23, minute: 59 }, '2026-01-29T00:00:00Z', 2), [
    '2026-02-28T23:59:00.000Z',
    '2026-03-28T23:59:00.000Z',
  ]);
});

t.test('across DST changes in an IANA zone', async (t) => {
  const berlin = { ...daily, hour: 2, minute: 30, timezone: 'Europe/Berlin' };
  t.same(
    runs(berlin, '2026-03-27T12:00:00Z', 3),
    ['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z'],
    '02:30 does not exist on 29 March: it runs at 03:00 CEST, the first minute after the gap, once',
  );
  t.same(
    runs(berlin, '2026-10-24T12:00:00Z', 2),
    ['2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z'],
    '02:30 happens twice on 25 October: it runs once, at the first',
  );
  const nine = { ...daily, hour: 9, timezone: 'America/New_York' };
  t.same(
    runs(nine, '2026-03-07T15:00:00Z', 2),
    ['2026-03-08T13:00:00.000Z', '2026-03-09T13:00:00.000Z'],
    '09:00 local stays 09:00 local when the offset changes (EST to EDT on 8 March)',
  );
  t.same(
    runs({ ...berlin, cadence: 'hourly', minute: 0 }, '2026-10-24T23:30:00Z', 4),
    ['2026-10-25T00:00:00.000Z', '2026-10-25T01:00:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T03:00:00.000Z'],
    'hourly keeps one run per real hour through the repeated hour',
  );
});

t.test('mail triggers: addresses, filters, never the workspace’s own mail', async (t) => {
  const own = (a: string) => a.endsWith('@ours.example');
  const mail = {
    mailbox: 'billing@ours.example',
    fromAddress: 'ap@supplier.test',
    fromName: 'Supplier Billing',
    subject: 'Invoice 42',
  };
  const trigger: MailTrigger = { kind: 'mail', addresses: [], senderContains: null, subjectContains: null };
  t.ok(mailStartsRun(trigger, mail, own), 'no filter: every message');
  t.notOk(mailStartsRun(trigger, { ...mail, fromAddress: 'me@ours.example' }, own), 'never from an own address');
  t.ok(mailStartsRun({ ...trigger, addresses: ['billing@ours.example'] }, mail, own));
  t.notOk(mailStartsRun({ ...trigger, addresses: ['sales@ours.example'] }, mail, own));
  t.ok(mailStartsRun({ ...trigger, senderContains: 'BILLING' }, mail, own), 'sender name, any case');
  t.ok(mailStartsRun({ ...trigger, senderContains: 'supplier.test' }, mail, own), 'sender address');
  t.notOk(mailStartsRun({ ...trigger, senderContains: 'bank' }, mail, own));
  t.ok(mailStartsRun({ ...trigger, subjectContains: 'invoice', senderContains: 'ap@' }, mail, own));
  t.notOk(mailStartsRun({ ...trigger, subjectContains: 'receipt' }, mail, own), 'both filters must match');
});
