import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf, keyWith } from '../support/domains.ts';
import { walkPages } from '../support/paging.ts';

/** Tasks through the api: every field, default and limit of the create body, updates, pause and resume, paging. */
const h = await startTestApp(t, { tasks: { limits: { tasks: 6, active: 3 } } });
const ws = await h.workspace();
const foreign = await h.workspace();
const UNKNOWN = 'tsk_000000000000000000000000';
const create = (body: object, key = ws.apiKey) => h.request(key, 'POST', '/tasks', body);
const manual = (name: string, extra: object = {}) =>
  create({ name, instruction: 'Tidy the inbox.', trigger: { kind: 'manual' }, ...extra });
const ids = async (status = '') =>
  (await h.request(ws.apiKey, 'GET', `/tasks?limit=100${status}`)).json().data.map((x: { id: string }) => x.id);

t.test('create with defaults, read, list, then every field given', async (t) => {
  const res = await create({
    name: '  Morning digest ',
    instruction: ' Summarise what came in overnight. ',
    trigger: { kind: 'schedule', cadence: 'daily' },
  });
  t.equal(res.statusCode, 201, res.body);
  const task = res.json();
  t.match(task, {
    object: 'task',
    id: /^tsk_[0-9a-f]{24}$/,
    name: 'Morning digest',
    instruction: 'Summarise what came in overnight.',
    trigger: {
      kind: 'schedule',
      cadence: 'daily',
      everyHours: 1,
      hour: 8,
      minute: 0,
      weekdays: [0, 1, 2, 3, 4, 5, 6],
      monthDay: 1,
      timezone: 'UTC',
    },
    autonomy: 'organize',
    toolkits: ['drafts', 'notes', 'knowledge'],
    model: 'standard',
    notify: 'attention',
    maxRunsPerDay: 50,
    maxSteps: 20,
    status: 'active',
    pausedReason: null,
    heldUntil: null,
    lastRunStatus: null,
    pendingApprovals: 0,
  });
  t.match(task.nextRunAt, /T08:00:00\.000Z$/, 'a schedule task has nextRunAt at once');
  t.ok(Date.parse(task.nextRunAt) > Date.now());
  t.same((await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)).json(), task, 'a read right after sees it');

  const full = await create({
    name: 'Monthly report',
    instruction: 'Draft the monthly report.',
    trigger: { kind: 'schedule', cadence: 'monthly', monthDay: 28, hour: 23, minute: 59, timezone: 'Asia/Kolkata' },
    autonomy: 'ask',
    toolkits: [],
    model: 'advanced',
    notify: 'never',
    maxRunsPerDay: 500,
    maxSteps: 60,
    paused: true,
  });
  t.equal(full.statusCode, 201, full.body);
  t.match(full.json(), {
    trigger: { cadence: 'monthly', monthDay: 28, hour: 23, minute: 59 },
    toolkits: [],
    model: 'advanced',
    notify: 'never',
    autonomy: 'ask',
    maxRunsPerDay: 500,
    maxSteps: 60,
    status: 'paused',
    pausedReason: 'user',
    nextRunAt: null,
  });
  t.match(full.json().trigger.timezone, /^Asia\/(Kolkata|Calcutta)$/);
  t.same(await ids(), [full.json().id, task.id], 'most recently changed first');
  t.same(await ids('&status=paused'), [full.json().id]);
  for (const id of [task.id, full.json().id])
    t.equal((await h.request(ws.apiKey, 'DELETE', `/tasks/${id}`)).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)), [404, 'task_not_found', 'id']);
});

t.test('limits of the create body at the edge and one past', async (t) => {
  const base = { name: 'Edge', instruction: 'x', trigger: { kind: 'manual' } };
  const edges: [object, object, string][] = [
    [{ name: 'n'.repeat(120) }, { name: 'n'.repeat(121) }, 'name'],
    [{ instruction: 'i'.repeat(8000) }, { instruction: 'i'.repeat(8001) }, 'instruction'],
    [{ maxRunsPerDay: 1 }, { maxRunsPerDay: 0 }, 'maxRunsPerDay'],
    [{ maxRunsPerDay: 500 }, { maxRunsPerDay: 501 }, 'maxRunsPerDay'],
    [{ maxSteps: 60 }, { maxSteps: 61 }, 'maxSteps'],
    [{ maxSteps: 1 }, { maxSteps: 0 }, 'maxSteps'],
    [
      { trigger: { kind: 'schedule', cadence: 'hourly', everyHours: 12 } },
      { trigger: { kind: 'schedule', cadence: 'hourly', everyHours: 13 } },
      'trigger.everyHours',
    ],
    [
      { trigger: { kind: 'schedule', cadence: 'monthly', monthDay: 28 } },
      { trigger: { kind: 'schedule', cadence: 'monthly', monthDay: 29 } },
      'trigger.monthDay',
    ],
    [
      { trigger: { kind: 'mail', subjectContains: 's'.repeat(200) } },
      { trigger: { kind: 'mail', subjectContains: 's'.repeat(201) } },
      'trigger.subjectContains',
    ],
    [
      { trigger: { kind: 'mail', senderContains: 's'.repeat(200) } },
      { trigger: { kind: 'mail', senderContains: 's'.repeat(201) } },
      'trigger.senderContains',
    ],
  ];
  for (const [edge, past, param] of edges) {
    const ok = await create({ ...base, ...edge, paused: true });
    t.equal(ok.statusCode, 201, `${param} at the edge: ${ok.body}`);
    t.same(errorOf(await create({ ...base, ...past, paused: true })), [422, 'invalid_parameter', param]);
    await h.request(ws.apiKey, 'DELETE', `/tasks/${ok.json().id}`);
  }
  const refused: [object, string][] = [
    [{ name: '   ' }, 'name'],
    [{ trigger: { kind: 'weekly' } }, 'trigger.kind'],
    [{ trigger: { kind: 'schedule', cadence: 'daily', timezone: 'Mars/Olympus' } }, 'trigger.timezone'],
    [{ trigger: { kind: 'schedule', cadence: 'daily', weekdays: [1, 1] } }, 'trigger.weekdays'],
    [{ trigger: { kind: 'schedule', cadence: 'daily', weekdays: [7] } }, 'trigger.weekdays.0'],
    [{ toolkits: ['drafts', 'email'] }, 'toolkits.1'],
    [{ autonomy: 'all' }, 'autonomy'],
  ];
  for (const [body, param] of refused)
    t.same(errorOf(await create({ ...base, ...body })), [422, 'invalid_parameter', param], param);
  t.same(errorOf(await create({ ...base, colour: 'red' })), [422, 'unknown_parameter', 'colour']);
  t.same((await ids()).length, 0, 'nothing refused was kept');
});

t.test('mail trigger: addresses of the workspace, at most 25', async (t) => {
  const actor = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
  await addDomain(
    h.system.commands,
    h.system.domains,
    actor,
    { domain: 'tasks.example.com' },
    new Date().toISOString(),
  );
  const addresses = Array.from({ length: 25 }, (_, i) => `box${i}@tasks.example.com`);
  const made = await Promise.all(addresses.map((address) => h.request(ws.apiKey, 'POST', '/addresses', { address })));
  t.same(new Set(made.map((r) => r.statusCode)), new Set([201]));
  const trigger = { kind: 'mail', addresses: addresses.map((a) => a.toUpperCase()), senderContains: 'Billing' };
  const res = await create({ name: 'Invoices', instruction: 'File invoices.', trigger });
  t.equal(res.statusCode, 201, res.body);
  t.same(res.json().trigger, { kind: 'mail', addresses, senderContains: 'Billing', subjectContains: null });
  t.equal(res.json().nextRunAt, null);
  t.same(
    errorOf(
      await create({
        name: 'X',
        instruction: 'x',
        trigger: { ...trigger, addresses: [...addresses, 'more@tasks.example.com'] },
      }),
    ),
    [422, 'invalid_parameter', 'trigger.addresses'],
  );
  t.same(
    errorOf(
      await create({
        name: 'X',
        instruction: 'x',
        trigger: { kind: 'mail', addresses: ['box1@tasks.example.com', 'nobody@elsewhere.test'] },
      }),
    ),
    [422, 'address_has_no_mailbox', 'trigger.addresses.1'],
  );
  t.same(
    errorOf(
      await create(
        { name: 'X', instruction: 'x', trigger: { kind: 'mail', addresses: ['box1@tasks.example.com'] } },
        foreign.apiKey,
      ),
    ),
    [422, 'address_has_no_mailbox', 'trigger.addresses.0'],
    "another workspace's address is none of this one's",
  );
  await h.request(ws.apiKey, 'DELETE', `/tasks/${res.json().id}`);
});

t.test('update: only what changes; empty is 422; a new trigger replaces the old whole', async (t) => {
  const task = (
    await create({
      name: 'Weekly',
      instruction: 'Clean up.',
      trigger: { kind: 'schedule', cadence: 'daily', hour: 17, minute: 30, weekdays: [5], timezone: 'Europe/Berlin' },
      notify: 'always',
    })
  ).json();
  const renamed = await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, { name: 'Friday clean-up' });
  t.equal(renamed.statusCode, 200, renamed.body);
  t.match(renamed.json(), { name: 'Friday clean-up', notify: 'always', trigger: { hour: 17, weekdays: [5] } });
  t.ok(renamed.json().updatedAt >= task.updatedAt);
  t.equal(new Date(renamed.json().nextRunAt).getUTCDay(), 5, 'on a Friday');
  const retriggered = await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, {
    trigger: { kind: 'schedule', cadence: 'hourly', everyHours: 6 },
  });
  t.same(
    retriggered.json().trigger,
    {
      kind: 'schedule',
      cadence: 'hourly',
      everyHours: 6,
      hour: 8,
      minute: 0,
      weekdays: [0, 1, 2, 3, 4, 5, 6],
      monthDay: 1,
      timezone: 'UTC',
    },
    'omitted parts return to their defaults',
  );
  t.match(retriggered.json().nextRunAt, /T(00|06|12|18):00:00\.000Z$/);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, {})), [422, 'invalid_parameter', null]);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, { paused: true })), [
    422,
    'unknown_parameter',
    'paused',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, { maxSteps: 61 })), [
    422,
    'invalid_parameter',
    'maxSteps',
  ]);
  const elsewhere = { trigger: { kind: 'mail', addresses: ['nobody@elsewhere.test'] } };
  t.same(
    errorOf(await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, elsewhere)),
    [422, 'address_has_no_mailbox', 'trigger.addresses.0'],
    'a new mail trigger is checked as on create',
  );
  t.equal((await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)).json().trigger.kind, 'schedule', 'and not kept');
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/tasks/${UNKNOWN}`, { name: 'x' })), [
    404,
    'task_not_found',
    'id',
  ]);
  t.same(errorOf(await h.request(foreign.apiKey, 'PATCH', `/tasks/${task.id}`, { name: 'x' })), [
    404,
    'task_not_found',
    'id',
  ]);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});

t.test('pause and resume within the plan’s active tasks; the tasks limit', async (t) => {
  const first: string = (await manual('Active 0')).json().id;
  const second: string = (await manual('Active 1')).json().id;
  t.equal((await manual('Active 2')).statusCode, 201);
  t.same(errorOf(await manual('One too many')), [403, 'task_active_limit_reached', null]);
  const paused = await h.request(ws.apiKey, 'POST', `/tasks/${first}/pause`);
  t.match(paused.json(), { status: 'paused', pausedReason: 'user', nextRunAt: null });
  t.equal((await manual('Takes the freed place')).statusCode, 201);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/tasks/${first}/resume`)), [
    403,
    'task_active_limit_reached',
    null,
  ]);
  for (let i = 0; i < 2; i++) t.equal((await manual(`Paused ${i}`, { paused: true })).statusCode, 201);
  t.same(errorOf(await manual('Past the tasks', { paused: true })), [403, 'task_limit_reached', null]);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${second}`);
  const resumed = await h.request(ws.apiKey, 'POST', `/tasks/${first}/resume`);
  t.match(resumed.json(), { status: 'active', pausedReason: null });
  t.equal((await h.request(ws.apiKey, 'POST', `/tasks/${first}/resume`)).statusCode, 200, 'resuming an active task');
  t.same(errorOf(await h.request(foreign.apiKey, 'POST', `/tasks/${first}/pause`)), [404, 'task_not_found', 'id']);
  t.same(errorOf(await h.request(foreign.apiKey, 'DELETE', `/tasks/${first}`)), [404, 'task_not_found', 'id']);
  for (const id of await ids()) await h.request(ws.apiKey, 'DELETE', `/tasks/${id}`);
});

t.test('concurrent creates never pass the active limit', async (t) => {
  const answers = await Promise.all(Array.from({ length: 6 }, (_, i) => manual(`Race ${i}`)));
  t.same(answers.map((r) => r.statusCode).sort(), [201, 201, 201, 403, 403, 403]);
  for (const id of await ids()) await h.request(ws.apiKey, 'DELETE', `/tasks/${id}`);
});

t.test('paging most recently changed first, a row changed between pages', async (t) => {
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await manual(`Page ${i}`, { paused: true })).json().id);
  let added = '';
  const { seen, pages } = await walkPages(h, ws.apiKey, '/tasks?limit=2', async () => {
    await h.request(ws.apiKey, 'DELETE', `/tasks/${made[4]}`);
    added = (await manual('Added between', { paused: true })).json().id;
  });
  t.equal(pages, 3);
  t.same(
    seen,
    [made[4], made[3], made[2], made[1], made[0]],
    'the walk goes on past the deleted row; the new one is before it',
  );
  t.ok(added);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/tasks?cursor=nonsense')), [400, 'invalid_cursor', 'cursor']);
  for (const id of await ids()) await h.request(ws.apiKey, 'DELETE', `/tasks/${id}`);
});

t.test('scopes: reads need tasks:read with threads:read and emails:read; toolkits need theirs', async (t) => {
  const reader = await keyWith(h, ws.apiKey, { name: 'reader', scopes: ['tasks:read'] });
  t.same(errorOf(await h.request(reader, 'GET', '/tasks')), [403, 'insufficient_scope', null]);
  const writer = await keyWith(h, ws.apiKey, {
    name: 'writer',
    scopes: [
      'tasks:write',
      'threads:read',
      'threads:write',
      'emails:read',
      'emails:send',
      'labels:write',
      'drafts:read',
      'drafts:write',
    ],
  });
  const body = { name: 'Scoped', instruction: 'x', trigger: { kind: 'manual' }, paused: true };
  t.same(errorOf(await create({ ...body, toolkits: ['drafts', 'contacts'] }, writer)), [
    403,
    'insufficient_scope',
    'toolkits',
  ]);
  const made = await create({ ...body, toolkits: ['drafts', 'web'] }, writer);
  t.equal(made.statusCode, 201, made.body);
  t.same(
    errorOf(await create(body, writer)),
    [403, 'insufficient_scope', 'toolkits'],
    'the default toolkits need knowledge',
  );
  t.same(errorOf(await h.request(writer, 'PATCH', `/tasks/${made.json().id}`, { toolkits: ['files'] })), [
    403,
    'insufficient_scope',
    'toolkits',
  ]);
  const narrowed = await keyWith(h, ws.apiKey, {
    name: 'narrowed',
    scopes: ['tasks:read', 'threads:read', 'emails:read'],
    addressAllowlist: ['box1@tasks.example.com'],
  });
  t.same(errorOf(await h.request(narrowed, 'GET', '/tasks')), [422, 'capability_unsupported', 'addressAllowlist']);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${made.json().id}`);
});

t.test('run now without an AI model is 409 ai_not_configured; nothing queued', async (t) => {
  const task = (await manual('Asked for')).json();
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/runs`)), [409, 'ai_not_configured', null]);
  t.same(errorOf(await h.request(foreign.apiKey, 'POST', `/tasks/${task.id}/runs`)), [404, 'task_not_found', 'id']);
  const runs = await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs`);
  t.same(runs.json(), { object: 'list', data: [], hasMore: false, nextCursor: null });
  t.same(errorOf(await h.request(foreign.apiKey, 'GET', `/tasks/${task.id}/runs`)), [404, 'task_not_found', 'id']);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});

t.test('a one-off job without an AI model is 409 ai_not_configured; nothing queued', async (t) => {
  const job = { instruction: 'Tidy the inbox.', toolkits: [] };
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/task-jobs', job)), [409, 'ai_not_configured', null]);
  const jobs = await h.request(ws.apiKey, 'GET', '/task-jobs');
  t.same(jobs.json(), { object: 'list', data: [], hasMore: false, nextCursor: null });
});
