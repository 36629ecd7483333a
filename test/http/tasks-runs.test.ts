import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { appendDecided } from '../../commands/execute.ts';
import { newId } from '../../commands/ids.ts';
import { pauseTasksPastPlan } from '../../processes/tasks/plan.ts';
import { decideReceiveMessage } from '../../domain/threads/decide.ts';
import { threadStream } from '../../domain/threads/events.ts';
import { threadAggregate } from '../../domain/threads/state.ts';
import { startAiServer } from '../support/ai-server.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf } from '../support/domains.ts';
import { walkPages } from '../support/paging.ts';
import { eventually } from '../support/receiver.ts';

/**
 * Runs of tasks with a model configured, queued (the assistant is not started here: runs stay
 * queued; tasks-assistant.test.ts works them).
 */
const ai = await startAiServer(t);
const h = await startTestApp(t, {
  ai: { endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'assistant-1', timeoutMs: 1000 } },
  tasks: { scheduler: { pollMs: 20 }, runner: { start: false } },
});
const ws = await h.workspace();
const foreign = await h.workspace();
const create = async (body: object) => {
  const res = await h.request(ws.apiKey, 'POST', '/tasks', { instruction: 'Tidy up.', ...body });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const runNow = (id: string) => h.request(ws.apiKey, 'POST', `/tasks/${id}/runs`);
const runs = async (id: string) => (await h.request(ws.apiKey, 'GET', `/tasks/${id}/runs?limit=100`)).json().data;
const nextMidnight = () => {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1)).toISOString();
};
const schedule = async (taskId: string) =>
  (
    await h.system.database.pool.query<{ next_run_at: Date | null; seq: number }>(
      'SELECT next_run_at, seq FROM task_schedules WHERE task_id = $1',
      [taskId],
    )
  ).rows[0];
/** Makes a task's schedule fall due now, at `slot`, as the clock reaching it would. */
const dueAt = (taskId: string, slot: string) =>
  h.system.database.pool.query('UPDATE task_schedules SET next_run_at = $2, seq = seq + 1 WHERE task_id = $1', [
    taskId,
    slot,
  ]);

t.test('run now: queued with the settings of the moment; maxRunsPerDay exactly under concurrency', async (t) => {
  const task = await create({ name: 'Asked', trigger: { kind: 'manual' }, maxRunsPerDay: 3, model: 'advanced' });
  const answers = await Promise.all(Array.from({ length: 6 }, () => runNow(task.id)));
  t.same(answers.map((r) => r.statusCode).sort(), [202, 202, 202, 409, 409, 409]);
  const refused = answers.find((r) => r.statusCode === 409);
  t.same(errorOf(refused!), [409, 'task_run_limit_reached', null]);
  const queued = answers.find((r) => r.statusCode === 202)!.json();
  t.match(queued, {
    object: 'task_run',
    id: /^trn_[0-9a-f]{24}$/,
    taskId: task.id,
    source: 'manual',
    status: 'queued',
    scheduledFor: null,
    model: 'advanced',
  });
  t.equal((await runs(task.id)).length, 3);
  const read = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)).json();
  t.match(read, { lastRunStatus: 'queued', heldUntil: nextMidnight(), nextRunAt: null });
  await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, { model: 'standard', maxRunsPerDay: 4 });
  const fourth = await runNow(task.id);
  t.equal(fourth.statusCode, 202, 'a higher limit lets one more run today');
  t.equal(fourth.json().model, 'standard');
  t.same(
    (await runs(task.id)).map((r: { model: string }) => r.model).sort(),
    ['advanced', 'advanced', 'advanced', 'standard'],
    'runs queued before the update keep its old settings',
  );
  t.same(errorOf(await h.request(foreign.apiKey, 'POST', `/tasks/${task.id}/runs`)), [404, 'task_not_found', 'id']);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});

t.test('runs listed newest first across pages, a run added between pages', async (t) => {
  const task = await create({ name: 'Paged', trigger: { kind: 'manual' } });
  const made: string[] = [];
  for (let i = 0; i < 5; i++) made.push((await runNow(task.id)).json().id);
  let added = '';
  const { seen, pages } = await walkPages(h, ws.apiKey, `/tasks/${task.id}/runs?limit=2`, async () => {
    added = (await runNow(task.id)).json().id;
  });
  t.equal(pages, 3);
  t.same(seen, made.reverse(), 'the run added after the first page is before the cursor: not in this walk');
  t.same((await runs(task.id))[0].id, added);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});

t.test('the scheduler queues a due slot once, moves to the next instant, holds past maxRunsPerDay', async (t) => {
  const task = await create({
    name: 'Hourly',
    trigger: { kind: 'schedule', cadence: 'hourly', minute: 7, timezone: 'Europe/Berlin' },
    maxRunsPerDay: 2,
  });
  const first = await schedule(task.id);
  t.equal(first?.next_run_at?.toISOString(), task.nextRunAt, 'the scheduler has the instant the task shows');
  await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, { name: 'Hourly, renamed' });
  t.same(await schedule(task.id), first, 'a change that keeps the trigger keeps the instant and its job');
  const slot = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 60_000).toISOString();
  await dueAt(task.id, slot);
  const [run] = await eventually(async () => {
    const listed = await runs(task.id);
    return listed.length > 0 && listed;
  });
  t.match(run, { source: 'schedule', scheduledFor: slot, status: 'queued' });
  const moved = await eventually(async () => {
    const row = await schedule(task.id);
    return row?.next_run_at && row.next_run_at.getTime() > Date.now() && row;
  });
  t.equal(moved.next_run_at?.getUTCMinutes(), 7, 'at the next :07');
  t.equal((await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)).json().nextRunAt, moved.next_run_at?.toISOString());

  await dueAt(task.id, slot);
  await eventually(async () => ((await schedule(task.id))?.next_run_at?.getTime() ?? 0) > Date.now());
  t.equal((await runs(task.id)).length, 1, 'the same slot again (a job repeated after a crash) queues nothing');

  t.equal((await runNow(task.id)).statusCode, 202, 'the second run of the day');
  const later = new Date(Date.parse(slot) + 1000).toISOString();
  await dueAt(task.id, later);
  await eventually(async () => ((await schedule(task.id))?.next_run_at?.getTime() ?? 0) > Date.now());
  t.equal((await runs(task.id)).length, 2, 'a third slot past maxRunsPerDay is held, not queued');
  const held = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)).json();
  t.equal(held.heldUntil, nextMidnight());
  t.ok(Date.parse(held.nextRunAt) >= Date.parse(held.heldUntil), 'the next run is after the hold');

  const paused = (await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/pause`)).json();
  t.equal(paused.nextRunAt, null);
  t.equal((await schedule(task.id))?.next_run_at, null, 'a paused task is not scheduled');
  await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/resume`);
  t.equal((await schedule(task.id))?.next_run_at?.getUTCMinutes(), 7, 'resumed: from the next instant on');
  await h.request(ws.apiKey, 'PATCH', `/tasks/${task.id}`, { trigger: { kind: 'manual' } });
  t.equal((await schedule(task.id))?.next_run_at, null, 'no schedule, nothing due');
  await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
  t.equal(await schedule(task.id), undefined);
});

/**
 * A message filed in the workspace, as the inbound listener files one: the thread's own decider,
 * appended to the store (the reactors then see it as they see any arrival).
 */
async function arrive(to: string, from: { name: string | null; address: string }, subject: string, spam = false) {
  const threadId = newId.thread();
  const messageId = newId.message();
  const events = decideReceiveMessage(threadAggregate.initialState, {
    message: {
      threadId,
      messageId,
      mailbox: { addressId: null, address: to, domainId: 'dom', domain: to.split('@')[1]! },
      mailFrom: from.address,
      rcptTo: [to],
      client: { ip: '192.0.2.1', helo: 'mail.outside.test' },
      raw: { sha256: 'a'.repeat(64), size: 100 },
      summary: {
        messageId: `${messageId}@outside.test`,
        inReplyTo: [],
        references: [],
        date: null,
        subject,
        from,
        replyTo: [],
        to: [],
        cc: [],
        bcc: [],
        headers: [],
        headersTruncated: false,
        snippet: '',
        attachments: [],
        size: 100,
      },
      authentication: {
        spf: { result: 'none', domain: null },
        dkim: [],
        dmarc: null,
        dmarcSkipped: null,
        arc: { result: 'none', instance: 0 },
        header: '',
      } as never,
      spam: { spam, reasons: spam ? ['dmarc_reject'] : [], score: null },
      threadedBy: 'new',
      normalisedSubject: subject.toLowerCase(),
      receivedAt: new Date().toISOString(),
    },
    replyTo: null,
  });
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  await appendDecided(h.system.commands, actor, threadStream(ws.workspaceId, threadId), events, 'no_stream');
  return messageId;
}

t.test('arriving mail starts the runs its triggers match, once, never from the workspace', async (t) => {
  const actor = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
  await addDomain(h.system.commands, h.system.domains, actor, { domain: 'runs.example.com' }, new Date().toISOString());
  for (const address of ['billing@runs.example.com', 'sales@runs.example.com'])
    t.equal((await h.request(ws.apiKey, 'POST', '/addresses', { address })).statusCode, 201);
  const invoices = await create({
    name: 'Invoices',
    trigger: { kind: 'mail', addresses: ['billing@runs.example.com'], subjectContains: 'invoice' },
  });
  const everything = await create({ name: 'Everything', trigger: { kind: 'mail' } });
  const paused = await create({ name: 'Paused', trigger: { kind: 'mail' }, paused: true });
  const supplier = { name: 'Supplier', address: 'ap@supplier.test' };

  const first = await arrive('billing@runs.example.com', supplier, 'Invoice 42');
  const both = await eventually(async () => {
    const [a, b] = [await runs(invoices.id), await runs(everything.id)];
    return a.length === 1 && b.length === 1 && [a[0], b[0]];
  });
  t.match(both[0], { source: 'mail', messageId: first, scheduledFor: null, status: 'queued' });
  t.match(both[1], { source: 'mail', messageId: first });

  await arrive('sales@runs.example.com', supplier, 'Invoice 43');
  await arrive('billing@runs.example.com', { name: 'Ours', address: 'sales@runs.example.com' }, 'Invoice 44');
  await arrive('billing@runs.example.com', supplier, 'Invoice 45', true);
  await eventually(async () => (await runs(everything.id)).length === 2);
  await eventually(async () => {
    const left = await h.system.database.pool.query('SELECT count(*)::int AS n FROM task_mail_runs');
    return left.rows[0].n === 0;
  });
  t.equal((await runs(invoices.id)).length, 1, 'another address, the workspace’s own mail and spam start nothing');
  t.equal((await runs(everything.id)).length, 2, 'only the message to sales from outside');
  t.equal((await runs(paused.id)).length, 0, 'a paused task starts nothing');
  for (const task of [invoices, everything, paused]) await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});

t.test('a plan lowered below the active tasks pauses the newest with plan_limit', async (t) => {
  const made = [];
  for (const name of ['First', 'Second', 'Third'])
    made.push(await create({ name, trigger: { kind: 'schedule', cadence: 'daily' } }));
  const lowered = { tasks: 100, active: 2 };
  t.equal(await pauseTasksPastPlan(h.system.database.pool, h.system.commands, lowered), 1);
  const third = (await h.request(ws.apiKey, 'GET', `/tasks/${made[2].id}`)).json();
  t.match(third, { status: 'paused', pausedReason: 'plan_limit', nextRunAt: null });
  t.equal((await schedule(made[2].id))?.next_run_at, null, 'not scheduled');
  t.same(
    (await h.request(ws.apiKey, 'GET', '/tasks?status=active'))
      .json()
      .data.map((x: { id: string }) => x.id)
      .sort(),
    [made[0].id, made[1].id].sort(),
    'the ones created first stay active',
  );
  t.equal(await pauseTasksPastPlan(h.system.database.pool, h.system.commands, lowered), 0, 'within the plan: nothing');
  const resumed = await h.request(ws.apiKey, 'POST', `/tasks/${made[2].id}/resume`);
  t.match(resumed.json(), { status: 'active', pausedReason: null }, 'resumed within the service’s own limit');
  for (const task of made) await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});
