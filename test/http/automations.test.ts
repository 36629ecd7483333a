import t from 'tap';
import { createContact } from '../../commands/contacts/handlers.ts';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve } from '../../system.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { freshDatabase } from '../support/database.ts';
import { eventually } from '../support/receiver.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

/** A minute of the automations lasts 100 ms here. */
const FAST = { automations: { minuteMs: 100, pollMs: 20 } };
const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

async function contact(h: Pick<TestApp, 'system'>, workspaceId: string, email: string): Promise<string> {
  return (
    await createContact(
      h.system.commands,
      { workspaceId, kind: 'system', id: null },
      { email, source: 'manual' },
      new Date().toISOString(),
    )
  ).contactId;
}

async function automation(h: TestApp, key: string, body: object) {
  const res = await h.request(key, 'POST', '/automations', { name: 'A', ...body });
  if (res.statusCode !== 201) throw new Error(`automation not created: ${res.statusCode} ${res.body}`);
  return res.json();
}

const send = (h: TestApp, key: string, body: object, headers?: Record<string, string>) =>
  h.request(key, 'POST', '/events', body, headers);
const sends = async (h: TestApp, key: string, id: string) =>
  (await h.request(key, 'GET', `/automations/${id}/sends?limit=100`)).json().data;
const runs = async (h: TestApp, key: string, id: string) =>
  (await h.request(key, 'GET', `/automations/${id}/runs?limit=100`)).json().data;

/**
 * One app for the tests on FAST: each makes a workspace of its own, and runs, sends and timers
 * are per automation, so they cannot see each other's. Tests on other settings have their own.
 */
const h = await startTestApp(t, FAST);

t.test('create, read, list, update with If-Match, pause and resume', async (t) => {
  const ws = await h.workspace();
  const steps = [
    { type: 'wait', minutes: 5 },
    { type: 'branch', ifEvent: 'clicked', withinMinutes: 60, then: [{ type: 'send', template: 'thanks' }], else: [] },
  ];
  const created = await h.request(ws.apiKey, 'POST', '/automations', {
    name: ' Welcome ',
    trigger: { event: 'signed_up', filters: [{ property: 'plan', op: 'equals', value: 'pro' }] },
    steps,
  });
  t.equal(created.statusCode, 201, created.body);
  const a = created.json();
  t.match(a, {
    object: 'automation',
    name: 'Welcome',
    status: 'live',
    trigger: { event: 'signed_up', filters: [{ property: 'plan', op: 'equals', value: 'pro' }] },
    steps,
  });
  t.match(a.id, /^aut_[0-9a-f]{24}$/);
  t.equal(created.headers.etag, '"0"');
  const read = await h.request(ws.apiKey, 'GET', `/automations/${a.id}`);
  t.same(read.json(), a);
  t.equal((await h.request(ws.apiKey, 'GET', '/automations')).json().data.length, 1);

  const renamed = await h.request(ws.apiKey, 'PATCH', `/automations/${a.id}`, { name: 'Hello' }, { 'if-match': '"0"' });
  t.equal(renamed.statusCode, 200);
  t.equal(renamed.json().name, 'Hello');
  t.equal(renamed.headers.etag, '"1"');
  t.same(
    errorOf(await h.request(ws.apiKey, 'PATCH', `/automations/${a.id}`, { name: 'Stale' }, { 'if-match': '"0"' })),
    [409, 'version_conflict', null],
  );
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', `/automations/${a.id}/pause`, undefined, { 'if-match': 'garbage' })),
    [409, 'version_conflict', null],
  );
  const race = await Promise.all(
    ['x', 'y', 'z'].map((n) =>
      h.request(ws.apiKey, 'PATCH', `/automations/${a.id}`, { name: n }, { 'if-match': '"1"' }),
    ),
  );
  t.same(race.map((r) => r.statusCode).sort(), [200, 409, 409], 'concurrent edits of one revision: one wins');

  const paused = await h.request(ws.apiKey, 'POST', `/automations/${a.id}/pause`);
  t.equal(paused.json().status, 'paused');
  t.equal(
    (await h.request(ws.apiKey, 'POST', `/automations/${a.id}/pause`)).headers.etag,
    paused.headers.etag,
    'pausing twice writes nothing',
  );
  t.equal((await h.request(ws.apiKey, 'GET', '/automations?status=live')).json().data.length, 0);
  t.equal((await h.request(ws.apiKey, 'POST', `/automations/${a.id}/resume`)).json().status, 'live');
  t.equal((await h.request(ws.apiKey, 'PATCH', `/automations/${a.id}`, { status: 'paused' })).json().status, 'paused');

  const bad = async (body: object, param: string, code = 'invalid_parameter') =>
    t.same(
      errorOf(
        await h.request(ws.apiKey, 'POST', '/automations', { name: 'B', trigger: { event: 'x' }, steps: [], ...body }),
      ),
      [422, code, param],
    );
  await bad({ trigger: { event: '_x' } }, 'trigger.event');
  await bad({ trigger: { event: 'x', filters: [{ property: 'p', op: 'equals' }] } }, 'trigger.filters.0.value');
  await bad({ trigger: { event: 'x', filters: [{ property: 'p', op: 'like', value: 1 }] } }, 'trigger.filters.0.op');
  await bad({ steps: [{ type: 'wait', minutes: 0 }] }, 'steps.0.minutes');
  await bad({ steps: [{ type: 'teleport' }] }, 'steps.0.type');
  await bad(
    { steps: [{ type: 'branch', ifEvent: 'x', then: [{ type: 'wait' }], else: [] }] },
    'steps.0.then.0.minutes',
  );
  await bad({ steps: [{ type: 'send', template: 't', bcc: 'x' }] }, 'steps.0.bcc', 'unknown_parameter');
  await bad({ steps: Array.from({ length: 51 }, () => ({ type: 'send', template: 't' })) }, 'steps');

  const other = await h.workspace();
  t.same(
    errorOf(await h.request(other.apiKey, 'GET', `/automations/${a.id}`)),
    [404, 'resource_not_found', 'id'],
    'foreign is 404',
  );
  t.same(errorOf(await h.request(other.apiKey, 'PATCH', `/automations/${a.id}`, { name: 'x' })), [
    404,
    'resource_not_found',
    'id',
  ]);
  const reader = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['automations:read'] })).json().token;
  t.equal((await h.request(reader, 'GET', '/automations')).statusCode, 200);
  t.same(errorOf(await h.request(reader, 'POST', '/automations', { name: 'x', trigger: { event: 'x' }, steps: [] })), [
    403,
    'insufficient_scope',
    null,
  ]);
});

t.test('enrolment: matching live automations only, answered synchronously; email never reaches steps', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  await contact(h, ws.workspaceId, 'b@example.com');
  const pro = await automation(h, ws.apiKey, {
    trigger: { event: 'signed_up', filters: [{ property: 'plan', op: 'equals', value: 'pro' }] },
    steps: [{ type: 'send', template: 'welcome-pro', data: { greeting: 'hi' } }],
  });
  // A long wait keeps contacts in runs of `any` for the whole test.
  const any = await automation(h, ws.apiKey, {
    trigger: { event: 'signed_up' },
    steps: [
      { type: 'wait', minutes: 1000 },
      { type: 'send', template: 'welcome' },
    ],
  });
  const batchy = await automation(h, ws.apiKey, {
    trigger: { event: 'batch_evt' },
    steps: [{ type: 'wait', minutes: 1000 }],
  });
  const byEmail = await automation(h, ws.apiKey, {
    trigger: { event: 'signed_up', filters: [{ property: 'email', op: 'exists' }] },
    steps: [],
  });
  const paused = await automation(h, ws.apiKey, { status: 'paused', trigger: { event: 'signed_up' }, steps: [] });
  await automation(h, ws.apiKey, { trigger: { event: 'other' }, steps: [] });

  const res = await send(h, ws.apiKey, {
    name: 'signed_up',
    email: 'a@example.com',
    properties: { plan: 'pro', email: 'leak@example.com', n: 1 },
  });
  t.same(
    [...res.json().enrolled].sort(),
    [pro.id, any.id].sort(),
    'every matching live automation; not the paused one, not a filter on `email`',
  );
  t.same(
    (await send(h, ws.apiKey, { name: 'signed_up', email: 'b@example.com', properties: { plan: 'free' } })).json()
      .enrolled,
    [any.id],
  );
  t.same(
    (await send(h, ws.apiKey, { name: 'Signed_up', email: 'b@example.com' })).json().enrolled,
    [],
    'names match case-sensitively',
  );
  t.same(
    (await send(h, ws.apiKey, { name: 'signed_up', email: 'a@example.com', properties: { plan: 'free' } })).json()
      .enrolled,
    [],
    'a contact in a run is not enrolled again',
  );

  const [s] = await eventually(async () => {
    const l = await sends(h, ws.apiKey, pro.id);
    return l.length === 1 && l;
  });
  t.match(s, {
    object: 'automation_send',
    automationId: pro.id,
    email: 'a@example.com',
    template: 'welcome-pro',
    data: { plan: 'pro', n: 1, greeting: 'hi' },
  });
  t.notOk('email' in s.data, 'a property named email is stored but never reaches a step');
  const stored = (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events')).json().data.at(-1);
  t.equal(stored.properties.email, 'leak@example.com', 'and it is stored');
  await eventually(async () => (await runs(h, ws.apiKey, pro.id)).every((r: any) => r.status === 'completed') && true);
  t.same(await runs(h, ws.apiKey, byEmail.id), []);
  t.same(await runs(h, ws.apiKey, paused.id), []);
  t.same(
    (await send(h, ws.apiKey, { name: 'signed_up', email: 'a@example.com', properties: { plan: 'pro' } })).json()
      .enrolled,
    [pro.id],
    'after its run completed, enrolled again',
  );

  const testKey = (
    await h.request(ws.apiKey, 'POST', '/keys', {
      scopes: ['contacts:write', 'automations:read', 'automations:write'],
      mode: 'test',
    })
  ).json().token;
  const testAutomation = await automation(h, testKey, {
    trigger: { event: 'batch_evt' },
    steps: [{ type: 'send', template: 't' }],
  });
  const quiet = await send(h, testKey, { name: 'batch_evt', email: 'b@example.com', createContact: true });
  t.same(
    [quiet.json().mode, quiet.json().enrolled, quiet.json().resumed],
    ['test', [], 0],
    'a test key starts nothing, not even its own test-mode automation',
  );
  t.same(await runs(h, ws.apiKey, batchy.id), []);
  t.same(await runs(h, testKey, testAutomation.id), []);
  const batch = await h.request(
    ws.apiKey,
    'POST',
    '/events/batch',
    {
      events: [
        { name: 'batch_evt', email: 'b@example.com' },
        { name: 'batch_evt', email: 'b@example.com' },
      ],
    },
    { 'idempotency-key': 'k1' },
  );
  t.same(
    batch.json().accepted.map((a: any) => a.enrolled),
    [[batchy.id], []],
    'in a batch, the first event enrols',
  );
  const again = await h.request(
    ws.apiKey,
    'POST',
    '/events/batch',
    { events: [{ name: 'batch_evt', email: 'b@example.com' }] },
    { 'idempotency-key': 'k1' },
  );
  t.same(
    again.json().accepted.map((a: any) => [a.replayed, a.enrolled, a.resumed]),
    [[true, [], 0]],
    'a replay starts nothing',
  );
  t.equal((await runs(h, ws.apiKey, batchy.id)).length, 1);
});

t.test('wait_for_event ends on the event (resumed) or on its timeout; wait; branch both ways', async (t) => {
  const ws = await h.workspace();
  for (const e of ['a', 'b', 'c', 'd']) await contact(h, ws.workspaceId, `${e}@example.com`);
  const waiting = await automation(h, ws.apiKey, {
    trigger: { event: 'trial_started' },
    steps: [
      { type: 'wait_for_event', name: 'activated', timeoutMinutes: 30 },
      {
        type: 'branch',
        ifEvent: 'activated',
        then: [{ type: 'send', template: 'thanks' }],
        else: [{ type: 'send', template: 'nudge' }],
      },
    ],
  });
  t.same((await send(h, ws.apiKey, { name: 'trial_started', email: 'a@example.com' })).json().enrolled, [waiting.id]);
  t.same((await send(h, ws.apiKey, { name: 'trial_started', email: 'b@example.com' })).json().enrolled, [waiting.id]);
  await eventually(async () => {
    const r = await runs(h, ws.apiKey, waiting.id);
    return r.length === 2 && r.every((x: any) => x.status === 'waiting' && x.waitingFor === 'activated');
  });
  t.equal(
    (await send(h, ws.apiKey, { name: 'other', email: 'a@example.com' })).json().resumed,
    0,
    'another name ends no wait',
  );
  t.equal(
    (await send(h, ws.apiKey, { name: 'activated', email: 'b@example.com' })).json().resumed,
    1,
    "b's own wait ends",
  );
  const r = await send(h, ws.apiKey, { name: 'activated', email: 'a@example.com' });
  t.equal(r.json().resumed, 1, 'the wait for `activated` ended');
  t.equal((await send(h, ws.apiKey, { name: 'activated', email: 'a@example.com' })).json().resumed, 0, 'ended once');
  const done = await eventually(async () => {
    const l = await sends(h, ws.apiKey, waiting.id);
    return l.length === 2 && l;
  });
  t.same(
    done.map((s: any) => [s.email, s.template]).sort(),
    [
      ['a@example.com', 'thanks'],
      ['b@example.com', 'thanks'],
    ],
    'branch: the event came',
  );

  // Timeout: nobody sends `activated`; 30 "minutes" are 3 s here. The plain wait below runs
  // meanwhile, rather than after it.
  const waits = await automation(h, ws.apiKey, {
    trigger: { event: 'bought' },
    steps: [
      { type: 'wait', minutes: 10 },
      { type: 'send', template: 'review', subject: 'How was it?' },
    ],
  });
  t.same((await send(h, ws.apiKey, { name: 'trial_started', email: 'c@example.com' })).json().enrolled, [waiting.id]);
  const started = Date.now();
  const t0 = Date.now();
  t.same((await send(h, ws.apiKey, { name: 'bought', email: 'd@example.com' })).json().enrolled, [waits.id]);
  await new Promise((res) => setTimeout(res, 500));
  t.same(await sends(h, ws.apiKey, waits.id), [], 'nothing before the wait is over');
  const [review] = await eventually(async () => {
    const l = await sends(h, ws.apiKey, waits.id);
    return l.length === 1 && l;
  });
  t.ok(Date.now() - t0 >= 1000, 'the 10-minute wait took 1 s of test time');
  t.match(review, { template: 'review', subject: 'How was it?' });
  t.equal(
    (await send(h, ws.apiKey, { name: 'bought', email: 'd@example.com' })).json().resumed,
    0,
    'a plain wait is not ended by events',
  );

  const timedOut = await eventually(async () =>
    (await sends(h, ws.apiKey, waiting.id)).find((s: any) => s.email === 'c@example.com'),
  );
  t.equal(timedOut.template, 'nudge', 'branch: the event did not come');
  t.ok(Date.now() - started >= 2500, 'not before the timeout');
});

t.test('branch since enrolment: events sent with the trigger count, the trigger itself does not', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const clicked = await automation(h, ws.apiKey, {
    trigger: { event: 'signed_up' },
    steps: [
      {
        type: 'branch',
        ifEvent: 'clicked',
        then: [{ type: 'send', template: 'yes' }],
        else: [{ type: 'send', template: 'no' }],
      },
    ],
  });
  const again = await automation(h, ws.apiKey, {
    trigger: { event: 'signed_up' },
    steps: [
      {
        type: 'branch',
        ifEvent: 'signed_up',
        then: [{ type: 'send', template: 'again' }],
        else: [{ type: 'send', template: 'once' }],
      },
    ],
  });
  await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: [
      { name: 'signed_up', email: 'a@example.com' },
      { name: 'clicked', email: 'a@example.com' },
    ],
  });
  const [yes] = await eventually(async () => {
    const l = await sends(h, ws.apiKey, clicked.id);
    return l.length === 1 && l;
  });
  t.equal(yes.template, 'yes', "the click in the trigger's request");
  const [once] = await eventually(async () => {
    const l = await sends(h, ws.apiKey, again.id);
    return l.length === 1 && l;
  });
  t.equal(once.template, 'once', 'the trigger is not an event since enrolment');
});

/** Ends on `activated`; its timeout (600 minutes, 60 s here) is far beyond `eventually`'s 15 s. */
const heldForActivation = {
  trigger: { event: 'trial_started' },
  steps: [
    { type: 'wait_for_event', name: 'activated', timeoutMinutes: 600 },
    {
      type: 'branch',
      ifEvent: 'activated',
      then: [{ type: 'send', template: 'thanks' }],
      else: [{ type: 'send', template: 'nudge' }],
    },
  ],
};

t.test('an event that comes before its run reaches the wait still ends that wait', async (t) => {
  const ws = await h.workspace();
  for (const e of ['a', 'b', 'c']) await contact(h, ws.workspaceId, `${e}@example.com`);
  const held = await automation(h, ws.apiKey, heldForActivation);
  const started = Date.now();
  const batch = await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: [
      { name: 'trial_started', email: 'a@example.com' },
      { name: 'activated', email: 'a@example.com' },
    ],
  });
  t.same(
    batch.json().accepted.map((r: any) => [r.enrolled, r.resumed]),
    [
      [[held.id], 0],
      [[], 1],
    ],
    'the wait its run was heading for counts as ended',
  );
  const [thanks] = await eventually(async () => {
    const l = await sends(h, ws.apiKey, held.id);
    return l.length === 1 && l;
  });
  t.match(thanks, { email: 'a@example.com', template: 'thanks' }, 'the branch after the wait sees the event');
  t.ok(Date.now() - started < 10_000, 'long before the timeout');

  const reversed = await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: [
      { name: 'activated', email: 'b@example.com' },
      { name: 'trial_started', email: 'b@example.com' },
    ],
  });
  t.same(
    reversed.json().accepted.map((r: any) => [r.enrolled, r.resumed]),
    [
      [[], 0],
      [[held.id], 0],
    ],
    'an event before the trigger ends nothing',
  );
  await eventually(async () =>
    (await runs(h, ws.apiKey, held.id)).some(
      (r: any) => r.email === 'b@example.com' && r.status === 'waiting' && r.waitingFor === 'activated',
    ),
  );

  // An event during a timed step is not kept for the wait after it. The step lasts 3 s here: at
  // 0.5 s, a loaded machine let the run reach the wait before the event was sent.
  const later = await automation(h, ws.apiKey, {
    trigger: { event: 'bought' },
    steps: [
      { type: 'wait', minutes: 30 },
      { type: 'wait_for_event', name: 'reviewed', timeoutMinutes: 600 },
      { type: 'send', template: 'review-thanks' },
    ],
  });
  t.same((await send(h, ws.apiKey, { name: 'bought', email: 'c@example.com' })).json().enrolled, [later.id]);
  t.equal((await send(h, ws.apiKey, { name: 'reviewed', email: 'c@example.com' })).json().resumed, 0);
  await eventually(async () => (await runs(h, ws.apiKey, later.id))[0]?.waitingFor === 'reviewed');
  t.same(await sends(h, ws.apiKey, later.id), [], 'the wait began after the event and still waits');
  t.equal((await send(h, ws.apiKey, { name: 'reviewed', email: 'c@example.com' })).json().resumed, 1);
  await eventually(async () => (await sends(h, ws.apiKey, later.id)).length === 1);
});

t.test('an event right after the trigger ends the wait, however late the worker reaches it', async (t) => {
  // Runs are claimed once a second: each run is still `ready` when its `activated` arrives.
  const h = await startTestApp(t, { automations: { minuteMs: 100, pollMs: 1000 } });
  const ws = await h.workspace();
  const emails = ['a@example.com', 'b@example.com', 'c@example.com'];
  for (const e of emails) await contact(h, ws.workspaceId, e);
  const held = await automation(h, ws.apiKey, heldForActivation);
  const started = Date.now();
  for (const email of emails) {
    t.same((await send(h, ws.apiKey, { name: 'trial_started', email })).json().enrolled, [held.id]);
    t.equal((await send(h, ws.apiKey, { name: 'activated', email })).json().resumed, 1, `${email}: the wait ended`);
  }
  const done = await eventually(async () => {
    const l = await sends(h, ws.apiKey, held.id);
    return l.length === 3 && l;
  });
  t.same(
    done.map((s: any) => [s.email, s.template]).sort(),
    emails.map((e) => [e, 'thanks']),
  );
  t.ok(Date.now() - started < 10_000, 'long before the timeout');

  const testKey = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['contacts:write'], mode: 'test' })).json()
    .token;
  await contact(h, ws.workspaceId, 'd@example.com');
  t.same((await send(h, ws.apiKey, { name: 'trial_started', email: 'd@example.com' })).json().enrolled, [held.id]);
  t.equal(
    (await send(h, testKey, { name: 'activated', email: 'd@example.com', createContact: true })).json().resumed,
    0,
    'a test-key event ends nothing',
  );
  await eventually(async () =>
    (await runs(h, ws.apiKey, held.id)).some((r: any) => r.email === 'd@example.com' && r.status === 'waiting'),
  );
  t.equal((await sends(h, ws.apiKey, held.id)).length, 3, 'and the run waits on');
});

t.test(
  'delete: 404 afterwards and for foreign ids, scope, If-Match; runs under way end and their timers never fire',
  async (t) => {
    const ws = await h.workspace();
    await contact(h, ws.workspaceId, 'a@example.com');
    await contact(h, ws.workspaceId, 'b@example.com');
    const timed = await automation(h, ws.apiKey, {
      trigger: { event: 'go' },
      steps: [
        { type: 'wait', minutes: 5 },
        { type: 'send', template: 'late' },
      ],
    });
    const waiting = await automation(h, ws.apiKey, {
      trigger: { event: 'go' },
      steps: [
        { type: 'wait_for_event', name: 'activated', timeoutMinutes: 5 },
        { type: 'send', template: 'late' },
      ],
    });
    // Not deleted: its timer firing shows the deleted ones had their chance to fire and did not.
    const control = await automation(h, ws.apiKey, {
      trigger: { event: 'go' },
      steps: [
        { type: 'wait', minutes: 5 },
        { type: 'send', template: 'control' },
      ],
    });
    t.same(
      [...(await send(h, ws.apiKey, { name: 'go', email: 'a@example.com' })).json().enrolled].sort(),
      [timed.id, waiting.id, control.id].sort(),
    );
    await eventually(
      async () =>
        (await runs(h, ws.apiKey, timed.id))[0]?.status === 'waiting' &&
        (await runs(h, ws.apiKey, waiting.id))[0]?.status === 'waiting',
    );

    const other = await h.workspace();
    t.same(
      errorOf(await h.request(other.apiKey, 'DELETE', `/automations/${timed.id}`)),
      [404, 'resource_not_found', 'id'],
      'foreign is 404',
    );
    const reader = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['automations:read'] })).json().token;
    t.same(errorOf(await h.request(reader, 'DELETE', `/automations/${timed.id}`)), [403, 'insufficient_scope', null]);
    t.same(
      errorOf(await h.request(ws.apiKey, 'DELETE', `/automations/${timed.id}`, undefined, { 'if-match': '"7"' })),
      [409, 'version_conflict', null],
    );
    t.equal((await h.request(ws.apiKey, 'GET', `/automations/${timed.id}`)).statusCode, 200, 'refusals delete nothing');

    const gone = await h.request(ws.apiKey, 'DELETE', `/automations/${timed.id}`, undefined, { 'if-match': '"0"' });
    t.equal(gone.statusCode, 200, gone.body);
    t.same(gone.json(), { object: 'automation', id: timed.id, deleted: true });
    t.same((await h.request(ws.apiKey, 'DELETE', `/automations/${waiting.id}`)).json(), {
      object: 'automation',
      id: waiting.id,
      deleted: true,
    });
    for (const [method, path] of [
      ['GET', `/automations/${timed.id}`],
      ['DELETE', `/automations/${timed.id}`],
      ['PATCH', `/automations/${timed.id}`],
      ['POST', `/automations/${timed.id}/pause`],
      ['POST', `/automations/${timed.id}/resume`],
      ['GET', `/automations/${timed.id}/runs`],
      ['GET', `/automations/${timed.id}/sends`],
    ] as const) {
      t.same(
        errorOf(await h.request(ws.apiKey, method, path, method === 'PATCH' ? { name: 'x' } : undefined)),
        [404, 'resource_not_found', 'id'],
        `${method} ${path} after delete`,
      );
    }
    t.same(
      (await h.request(ws.apiKey, 'GET', '/automations')).json().data.map((a: any) => a.id),
      [control.id],
      'not listed',
    );

    t.same(
      (await send(h, ws.apiKey, { name: 'go', email: 'b@example.com' })).json().enrolled,
      [control.id],
      'a deleted automation enrols nobody',
    );
    t.equal(
      (await send(h, ws.apiKey, { name: 'activated', email: 'a@example.com' })).json().resumed,
      0,
      'its waits are over',
    );
    await eventually(async () => (await sends(h, ws.apiKey, control.id)).length === 2);
    await new Promise((r) => setTimeout(r, 300));
    const { rows } = await h.system.database.pool.query(
      `SELECT (SELECT count(*)::int FROM automation_runs WHERE automation_id = ANY($1)) AS runs, (SELECT count(*)::int FROM automation_sends WHERE automation_id = ANY($1)) AS sends`,
      [[timed.id, waiting.id]],
    );
    t.same(rows, [{ runs: 0, sends: 0 }], 'the 5-minute timers passed and no step of a deleted automation ran');
  },
);

t.test('timers survive a restart of the system', async (t) => {
  const url = await freshDatabase(t);
  const options = { secretsKey: TEST_SECRETS_KEY, automations: { minuteMs: 200, pollMs: 20 } };
  let system = await openSystem(url, options);
  let app = await serve(system);
  const ws = await createWorkspace(system.commands, { name: 'R', ownerEmail: 'owner@example.com' });
  await contact({ system }, ws.workspaceId, 'a@example.com');
  await contact({ system }, ws.workspaceId, 'b@example.com');
  const call = (method: 'GET' | 'POST', path: string, body?: object) =>
    app
      .inject({
        method,
        url: path,
        headers: { authorization: `Bearer ${ws.apiKey}` },
        ...(body ? { payload: body } : {}),
      })
      .then((r) => r.json());
  const waitA = await call('POST', '/automations', {
    name: 'wait',
    trigger: { event: 'go' },
    steps: [
      { type: 'wait', minutes: 10 },
      { type: 'send', template: 'after-wait' },
    ],
  });
  const waitB = await call('POST', '/automations', {
    name: 'timeout',
    trigger: { event: 'go2' },
    steps: [
      { type: 'wait_for_event', name: 'never', timeoutMinutes: 10 },
      { type: 'send', template: 'after-timeout' },
    ],
  });
  t.same((await call('POST', '/events', { name: 'go', email: 'a@example.com' })).enrolled, [waitA.id]);
  t.same((await call('POST', '/events', { name: 'go2', email: 'b@example.com' })).enrolled, [waitB.id]);
  await eventually(async () => {
    const { rows } = await system.database.pool.query(
      "SELECT count(*)::int AS n FROM automation_runs WHERE status = 'waiting'",
    );
    return rows[0].n === 2;
  });
  await app.close();
  await system.close();
  // 2 s of timers; the system is down for a while of them.
  await new Promise((r) => setTimeout(r, 500));
  system = await openSystem(url, options);
  app = await serve(system);
  t.teardown(async () => {
    await app.close();
    await system.close();
  });
  const got = await eventually(async () => {
    const a = (await call('GET', `/automations/${waitA.id}/sends`)).data;
    const b = (await call('GET', `/automations/${waitB.id}/sends`)).data;
    return a.length === 1 && b.length === 1 && [a[0].template, b[0].template];
  });
  t.same(got, ['after-wait', 'after-timeout']);
  const { rows } = await system.database.pool.query('SELECT status FROM automation_runs');
  t.same(
    rows.map((r) => r.status),
    ['completed', 'completed'],
  );
});
