import t from 'tap';
import { reserveSend, SendQuotaExceeded } from '../../commands/emails/quota.ts';
import { secondsToNextMonth } from '../../domain/email-quotas/decide.ts';
import { PostgresEventStore } from '../../infra/eventstore/postgres.ts';
import { errorOf } from '../support/domains.ts';
import { startSendingApp } from '../support/emails.ts';

const ALLOWANCE = 20;

t.test('the monthly send allowance, counted exactly under concurrency', async (t) => {
  const { h, setUp, keyWith } = await startSendingApp(t, { sending: { monthlyAllowance: ALLOWANCE } });
  const { ws } = await setUp('example.com');
  const base = { from: 'a@example.com', to: 'x@example.org', subject: 'Hi', text: 'Body' };

  t.test('test mail and all-suppressed mail count nothing', async (t) => {
    const testKey = await keyWith(ws, { scopes: ['emails:send'], mode: 'test' });
    for (let i = 0; i < ALLOWANCE + 1; i++)
      t.equal((await h.request(testKey, 'POST', '/emails', base)).statusCode, 201);
    t.equal((await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'gone@example.org' })).statusCode, 201);
    const failed = await h.request(ws.apiKey, 'POST', '/emails', { ...base, to: 'gone@example.org' });
    t.match(failed.json(), { status: 'failed' });
  });

  t.test('32 sends at once at the edge: exactly the allowance through, the rest 429 with Retry-After', async (t) => {
    // 5 used first, so the concurrent ones meet the edge part-way.
    const first = await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: Array(5).fill(base) });
    t.equal(first.json().data.filter((d: { email: unknown }) => d.email).length, 5);
    const answers = await Promise.all(Array.from({ length: 32 }, () => h.request(ws.apiKey, 'POST', '/emails', base)));
    const accepted = answers.filter((a) => a.statusCode === 201);
    const refused = answers.filter((a) => a.statusCode === 429);
    t.equal(accepted.length, ALLOWANCE - 5);
    t.equal(refused.length, 32 - (ALLOWANCE - 5));
    t.same(errorOf(refused[0]!), [429, 'send_quota_exceeded', null]);
    const retryAfter = Number(refused[0]!.headers['retry-after']);
    const expected = secondsToNextMonth(new Date().toISOString());
    t.ok(Math.abs(retryAfter - expected) <= 5, `Retry-After ${retryAfter} counts down to the first of next month`);
    const batch = (await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: [base] })).json();
    t.match(batch.data, [{ email: null, error: { type: 'rate_limit_error', code: 'send_quota_exceeded' } }]);
    // Delivery runs meanwhile: the stored ones are queued, sending or delivered by now.
    const listed = (await h.request(ws.apiKey, 'GET', '/emails?limit=100')).json().data;
    t.equal(
      listed.filter((e: { status: string }) => e.status !== 'failed').length,
      ALLOWANCE,
      'what was refused was not stored',
    );

    // A 429 is not kept under its Idempotency-Key: the retry Retry-After asks for runs again.
    const key = { 'idempotency-key': 'past-the-allowance' };
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/emails', base, key)), [429, 'send_quota_exceeded', null]);
    h.system.sending.monthlyAllowance = ALLOWANCE + 1;
    const retried = await h.request(ws.apiKey, 'POST', '/emails', base, key);
    t.equal(retried.statusCode, 201);
    t.equal(retried.headers['idempotent-replayed'], undefined);
    t.equal((await h.request(ws.apiKey, 'POST', '/emails', base, key)).headers['idempotent-replayed'], 'true');
    h.system.sending.monthlyAllowance = ALLOWANCE;
  });

  t.test('two processes reserving on one stream: exact (the revision read decides)', async (t) => {
    const other = await h.workspace();
    // A second event store on the same database: reservations as another process makes them.
    const second = { ...h.system.commands, store: new PostgresEventStore(h.system.database.pool) };
    const now = new Date().toISOString();
    const outcomes = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) =>
        reserveSend(i % 2 === 0 ? h.system.commands : second, other.workspaceId, 25, now),
      ),
    );
    t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 25);
    const refused = outcomes.filter((o) => o.status === 'rejected');
    t.equal(refused.length, 15);
    t.ok(refused.every((o) => o.reason instanceof SendQuotaExceeded));
    await second.store.close();
  });

  t.test("a process appends on the count it knows; another's reservations since refuse it", async (t) => {
    const other = await h.workspace();
    const second = { ...h.system.commands, store: new PostgresEventStore(h.system.database.pool) };
    const now = new Date().toISOString();
    await reserveSend(h.system.commands, other.workspaceId, 3, now);
    // The first process knows 1 of 3 used; the second takes the other 2 behind its back.
    await reserveSend(second, other.workspaceId, 3, now);
    await reserveSend(second, other.workspaceId, 3, now);
    await t.rejects(reserveSend(h.system.commands, other.workspaceId, 3, now), { code: 'send_quota_exceeded' });
    await t.rejects(reserveSend(second, other.workspaceId, 3, now), { code: 'send_quota_exceeded' });
    await second.store.close();
  });
});
