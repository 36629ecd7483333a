import t from 'tap';
import { assertStreamOpen } from '../../commands/sending-streams/handlers.ts';
import { newId } from '../../commands/ids.ts';
import { emailStream, type SendingStream } from '../../domain/emails/events.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf, keyWith } from '../support/domains.ts';
import { eventually } from '../support/receiver.ts';

const h = await startTestApp(t, { lanePauses: { pollMs: 20 } });

/**
 * Final answers and complaints of one lane, given to the log as the delivery process manager and
 * the receiving side record them: one message stream holding them all.
 */
async function answers(
  workspaceId: string,
  stream: SendingStream,
  n: { delivered?: number; bounced?: number; expired?: number; complained?: number },
) {
  const emailId = newId.email();
  const from = { addressId: 'addr_000000000000000000000000', domainId: 'd', email: 'news@lanes.example.com' };
  const at = new Date().toISOString();
  const base = (i: number) => ({
    emailId,
    messageId: `${emailId}@lanes.example.com`,
    from,
    stream,
    recipient: `r${i}@example.org`,
    attempt: 1,
    code: 250,
    enhancedCode: null,
    response: '250 OK',
    mx: 'mx.example.org',
    tls: true,
    at,
  });
  const events = [
    ...Array.from({ length: n.delivered ?? 0 }, (_, i) => ({ type: 'EmailRecipientDelivered', data: base(i) })),
    ...Array.from({ length: n.bounced ?? 0 }, (_, i) => ({
      type: 'EmailRecipientBounced',
      data: { ...base(i), code: 550, bounce: 'hard' },
    })),
    ...Array.from({ length: n.expired ?? 0 }, (_, i) => ({
      type: 'EmailRecipientBounced',
      data: { ...base(i), code: 451, bounce: 'expired' },
    })),
    ...Array.from({ length: n.complained ?? 0 }, (_, i) => ({
      type: 'EmailRecipientComplained',
      data: {
        emailId,
        messageId: base(i).messageId,
        from,
        stream,
        recipient: `r${i}@example.org`,
        feedbackType: 'abuse',
        at,
      },
    })),
  ];
  await h.system.store.append(
    emailStream(workspaceId, emailId),
    events.map((e) => ({ ...e, version: 1, metadata: { workspaceId, actor: { kind: 'system', id: null } } })),
    'no_stream',
  );
}

const lanes = async (key: string) => {
  const res = await h.request(key, 'GET', '/sending/streams');
  if (res.statusCode !== 200) throw new Error(res.body);
  return Object.fromEntries(res.json().data.map((l: { stream: string }) => [l.stream, l]));
};
const status = async (key: string, stream: SendingStream) => (await lanes(key))[stream].status;

/**
 * The lane's row in the guard (processes/sending-streams/guard.ts) once the guard has read every
 * answer given so far: a pause it owes is marked (`trip`) or already followed (`paused`), so a
 * lane left open is seen at once, not after a wait for a pause that might come.
 */
async function guarded(workspaceId: string, stream: SendingStream) {
  await h.system.commands.readModels.waitFor(await h.system.store.headPosition(), ['EmailRecipientBounced']);
  const { rows } = await h.system.database.pool.query('SELECT trip, paused FROM sending_lane_guard WHERE id = $1', [
    `${workspaceId}:${stream}`,
  ]);
  return rows[0];
}
const OPEN = { trip: null, paused: false };
const refusalOf = (promise: Promise<unknown>) =>
  promise.then(
    () => null,
    (e) => (e instanceof DomainError ? e.code : e),
  );

t.test('a fresh workspace: both lanes active, nothing counted', async (t) => {
  const ws = await h.workspace();
  const res = await h.request(ws.apiKey, 'GET', '/sending/streams');
  t.equal(res.statusCode, 200);
  t.match(res.json(), { object: 'list', hasMore: false, nextCursor: null });
  t.same(
    res
      .json()
      .data.map((l: { stream: string; status: string; sent: number; bounceRate: null }) => [
        l.stream,
        l.status,
        l.sent,
        l.bounceRate,
      ]),
    [
      ['transactional', 'active', 0, null],
      ['broadcast', 'active', 0, null],
    ],
  );
  t.match(res.json().data[0], {
    object: 'sending_stream',
    window: { days: 7 },
    thresholds: { bounceRate: 0.05, minimumForBounceRate: 100, complaintRate: 0.003, minimumForComplaintRate: 1000 },
  });
});

t.test('counts and rates over the window; expiries are sent, not bounced', async (t) => {
  const ws = await h.workspace();
  await answers(ws.workspaceId, 'transactional', { delivered: 40, bounced: 2, expired: 3 });
  await answers(ws.workspaceId, 'broadcast', { delivered: 10, complained: 1 });
  await eventually(async () => (await lanes(ws.apiKey)).broadcast.complained === 1);
  const l = await lanes(ws.apiKey);
  t.match(l.transactional, { sent: 45, bounced: 2, complained: 0, bounceRate: 2 / 45, complaintRate: 0 });
  t.match(l.broadcast, { sent: 10, bounced: 0, complained: 1, complaintRate: 0.1, status: 'active' });
  t.ok(l.transactional.window.from <= new Date().toISOString().slice(0, 10));
});

t.test('the bounce threshold: at 5 % the lane stays open, past it the lane pauses alone', async (t) => {
  const ws = await h.workspace();
  await answers(ws.workspaceId, 'transactional', { delivered: 95, bounced: 5 });
  await eventually(async () => (await lanes(ws.apiKey)).transactional.sent === 100);
  t.match(await guarded(ws.workspaceId, 'transactional'), OPEN, '5 of 100 is the threshold, not past it');
  t.equal(await status(ws.apiKey, 'transactional'), 'active');
  await answers(ws.workspaceId, 'transactional', { bounced: 1 });
  await eventually(async () => (await status(ws.apiKey, 'transactional')) === 'paused');
  const l = await lanes(ws.apiKey);
  t.match(l.transactional, { pauseReason: 'bounce_rate', lockedUntil: null, sent: 101, bounced: 6 });
  t.equal(l.broadcast.status, 'active', 'the other lane goes on');
  t.equal(await refusalOf(assertStreamOpen(h.system.commands, ws.workspaceId, 'transactional')), 'stream_paused');
  t.equal(await refusalOf(assertStreamOpen(h.system.commands, ws.workspaceId, 'broadcast')), null);
});

t.test('below the minimum volume no rate pauses a lane', async (t) => {
  const ws = await h.workspace();
  await answers(ws.workspaceId, 'transactional', { delivered: 49, bounced: 50 });
  await answers(ws.workspaceId, 'broadcast', { delivered: 999, complained: 50 });
  await eventually(async () => (await lanes(ws.apiKey)).broadcast.sent === 999);
  t.match(await guarded(ws.workspaceId, 'transactional'), OPEN);
  t.match(await guarded(ws.workspaceId, 'broadcast'), OPEN);
  const l = await lanes(ws.apiKey);
  t.same([l.transactional.status, l.broadcast.status, l.broadcast.sent], ['active', 'active', 999]);
});

t.test('the complaint threshold: past 0.3 % on 1,000 sent the broadcast lane pauses', async (t) => {
  const ws = await h.workspace();
  await answers(ws.workspaceId, 'broadcast', { delivered: 1000, complained: 3 });
  await eventually(async () => (await lanes(ws.apiKey)).broadcast.sent === 1000);
  t.match(await guarded(ws.workspaceId, 'broadcast'), OPEN, '3 of 1,000 is the threshold, not past it');
  t.equal(await status(ws.apiKey, 'broadcast'), 'active');
  await answers(ws.workspaceId, 'broadcast', { complained: 1 });
  await eventually(async () => (await status(ws.apiKey, 'broadcast')) === 'paused');
  t.match((await lanes(ws.apiKey)).broadcast, { pauseReason: 'complaint_rate' });
  t.equal(await status(ws.apiKey, 'transactional'), 'active');
});

t.test('resume: counting starts again; a second trip within a day locks the lane', async (t) => {
  const ws = await h.workspace();
  await answers(ws.workspaceId, 'transactional', { delivered: 90, bounced: 10 });
  await eventually(async () => (await status(ws.apiKey, 'transactional')) === 'paused');

  const resumed = await h.request(ws.apiKey, 'POST', '/sending/streams/transactional/resume');
  t.equal(resumed.statusCode, 200);
  t.match(resumed.json(), { stream: 'transactional', status: 'active', pausedAt: null, resumedAt: String });
  t.equal(await refusalOf(assertStreamOpen(h.system.commands, ws.workspaceId, 'transactional')), null);
  const again = await h.request(ws.apiKey, 'POST', '/sending/streams/transactional/resume');
  t.equal(again.statusCode, 200, 'an open lane answers as it is');

  // The 10 bounces before the resume are not counted again: one more does not trip the lane.
  await answers(ws.workspaceId, 'transactional', { bounced: 1 });
  await eventually(async () => (await lanes(ws.apiKey)).transactional.bounced === 11);
  t.match(await guarded(ws.workspaceId, 'transactional'), OPEN);
  t.equal(await status(ws.apiKey, 'transactional'), 'active');
  t.equal((await lanes(ws.apiKey)).transactional.bounced, 11, 'the 7-day view still shows them all');

  await answers(ws.workspaceId, 'transactional', { delivered: 93, bounced: 6 });
  await eventually(async () => (await status(ws.apiKey, 'transactional')) === 'paused');
  const locked = (await lanes(ws.apiKey)).transactional.lockedUntil;
  t.ok(Date.parse(locked) > Date.now() + 23 * 3_600_000, `locked for a day (${locked})`);
  const refused = await h.request(ws.apiKey, 'POST', '/sending/streams/transactional/resume');
  t.same(errorOf(refused), [409, 'stream_locked', 'stream']);
  t.equal(await status(ws.apiKey, 'transactional'), 'paused');
});

t.test('scopes, narrowed and test keys, an unknown lane', async (t) => {
  const ws = await h.workspace();
  const reader = await keyWith(h, ws.apiKey, { scopes: ['settings:read'] });
  const stranger = await keyWith(h, ws.apiKey, { scopes: ['emails:send'] });
  const narrowed = await keyWith(h, ws.apiKey, {
    scopes: ['settings:read', 'settings:write'],
    domainAllowlist: ['example.com'],
  });
  const test = await keyWith(h, ws.apiKey, { scopes: ['settings:read', 'settings:write'], mode: 'test' });
  t.equal((await h.request(reader, 'GET', '/sending/streams')).statusCode, 200);
  t.same(errorOf(await h.request(stranger, 'GET', '/sending/streams')).slice(0, 2), [403, 'insufficient_scope']);
  t.same(errorOf(await h.request(reader, 'POST', '/sending/streams/broadcast/resume')).slice(0, 2), [
    403,
    'insufficient_scope',
  ]);
  t.equal((await h.request(narrowed, 'GET', '/sending/streams')).statusCode, 200, 'a narrowed key reads the lanes');
  t.same(errorOf(await h.request(narrowed, 'POST', '/sending/streams/broadcast/resume')).slice(0, 2), [
    422,
    'capability_unsupported',
  ]);
  t.same(errorOf(await h.request(test, 'POST', '/sending/streams/broadcast/resume')).slice(0, 2), [
    403,
    'beyond_caller_authority',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/sending/streams/marketing/resume')), [
    404,
    'resource_not_found',
    'stream',
  ]);
});
