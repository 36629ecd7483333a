import t from 'tap';
import {
  decideCreateTask,
  decideDeleteTask,
  decidePauseBeyondPlan,
  decidePauseTask,
  decideQueueJob,
  decideQueueRun,
  decideResumeTask,
  decideUpdateTask,
  type QueueRun,
} from '../../domain/tasks/decide.ts';
import type { TaskEvent, TaskRunEvent, TaskSettings } from '../../domain/tasks/events.ts';
import {
  taskRunDayAggregate,
  tasksAggregate,
  type TaskRunDayState,
  type TasksState,
} from '../../domain/tasks/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-03-10T08:00:00.000Z';
const LIMITS = { tasks: 3, active: 2 };
const OWNER = { kind: 'apiKey' as const, id: 'key_1' };
const SETTINGS: TaskSettings = {
  name: 'Digest',
  instruction: 'Summarise yesterday’s mail.',
  trigger: { kind: 'manual' },
  autonomy: 'organize',
  toolkits: ['drafts', 'notes', 'knowledge'],
  model: 'standard',
  notify: 'attention',
  maxRunsPerDay: 50,
  maxSteps: 20,
};
const given = (events: TaskEvent[]): TasksState => events.reduce(tasksAggregate.evolve, tasksAggregate.initialState);
const created = (taskId: string, paused = false): TaskEvent => ({
  type: 'TaskCreated',
  data: { ...SETTINGS, taskId, owner: OWNER, paused, createdAt: NOW },
});
const create = (state: TasksState, taskId: string, paused = false) =>
  decideCreateTask(state, { taskId, owner: OWNER, settings: SETTINGS, paused, limits: LIMITS, now: NOW });

t.test('create: active or paused, within the plan’s tasks and active tasks', async (t) => {
  t.test('given nothing, a create is active; with paused it is paused by the user', async (t) => {
    t.same(create(given([]), 'tsk_1'), [created('tsk_1')]);
    const paused = given([created('tsk_1', true)]).tasks.get('tsk_1');
    t.match(paused, { status: 'paused', pausedReason: 'user' });
  });
  t.test('at the active limit an active create is 403; a paused one is not counted', async (t) => {
    const full = given([created('tsk_1'), created('tsk_2')]);
    t.equal(refusal(() => create(full, 'tsk_3')).code, 'task_active_limit_reached');
    t.same(create(full, 'tsk_3', true), [created('tsk_3', true)]);
  });
  t.test('at the tasks limit any create is 403 task_limit_reached', async (t) => {
    const full = given([created('tsk_1'), created('tsk_2', true), created('tsk_3', true)]);
    t.equal(refusal(() => create(full, 'tsk_4', true)).code, 'task_limit_reached');
  });
});

t.test('update: the whole settings; the same settings decide nothing; a missing task is task_not_found', async (t) => {
  const state = given([created('tsk_1')]);
  const trigger = { kind: 'mail' as const, addresses: [], senderContains: null, subjectContains: 'invoice' };
  t.same(decideUpdateTask(state, { taskId: 'tsk_1', settings: { ...SETTINGS, trigger }, now: NOW }), [
    { type: 'TaskUpdated', data: { ...SETTINGS, trigger, taskId: 'tsk_1', updatedAt: NOW } },
  ]);
  const reordered = Object.fromEntries(Object.entries(SETTINGS).reverse()) as TaskSettings;
  t.same(decideUpdateTask(state, { taskId: 'tsk_1', settings: reordered, now: NOW }), [], 'key order does not matter');
  t.equal(
    refusal(() => decideUpdateTask(state, { taskId: 'tsk_9', settings: SETTINGS, now: NOW })).code,
    'task_not_found',
  );
});

t.test('pause, resume, delete', async (t) => {
  t.test('pause sets reason user; pausing again decides nothing', async (t) => {
    const state = given([created('tsk_1')]);
    const paused = decidePauseTask(state, { taskId: 'tsk_1', now: NOW });
    t.same(paused, [{ type: 'TaskPaused', data: { taskId: 'tsk_1', reason: 'user', pausedAt: NOW } }]);
    t.same(decidePauseTask(paused.reduce(tasksAggregate.evolve, state), { taskId: 'tsk_1', now: NOW }), []);
  });
  t.test('resume within the active limit; past it 403; an active task decides nothing', async (t) => {
    const state = given([created('tsk_1'), created('tsk_2', true), created('tsk_3', true)]);
    const resumed = decideResumeTask(state, { taskId: 'tsk_2', limits: LIMITS, now: NOW });
    t.same(resumed, [{ type: 'TaskResumed', data: { taskId: 'tsk_2', resumedAt: NOW } }]);
    const full = resumed.reduce(tasksAggregate.evolve, state);
    t.match(full.tasks.get('tsk_2'), { status: 'active', pausedReason: null });
    t.equal(
      refusal(() => decideResumeTask(full, { taskId: 'tsk_3', limits: LIMITS, now: NOW })).code,
      'task_active_limit_reached',
    );
    t.same(decideResumeTask(full, { taskId: 'tsk_1', limits: LIMITS, now: NOW }), []);
  });
  t.test('delete frees its place; a deleted task is task_not_found', async (t) => {
    const state = given([
      created('tsk_1'),
      created('tsk_2'),
      { type: 'TaskDeleted', data: { taskId: 'tsk_2', deletedAt: NOW } },
    ]);
    t.same(create(state, 'tsk_3'), [created('tsk_3')]);
    t.equal(refusal(() => decideDeleteTask(state, { taskId: 'tsk_2', now: NOW })).code, 'task_not_found');
    t.equal(refusal(() => decidePauseTask(state, { taskId: 'tsk_2', now: NOW })).code, 'task_not_found');
  });
});

t.test('runs of a day: maxRunsPerDay exactly, a run id once', async (t) => {
  const day = (events: TaskRunEvent[]): TaskRunDayState =>
    events.reduce(taskRunDayAggregate.evolve, taskRunDayAggregate.initialState);
  const run = (runId: string, slot: string | null = null): QueueRun & { now: string } => ({
    runId,
    taskId: 'tsk_1',
    source: slot ? 'schedule' : 'manual',
    slot,
    messageId: null,
    maxRunsPerDay: 2,
    settings: { ...SETTINGS, owner: OWNER },
    now: NOW,
  });
  const first = decideQueueRun(day([]), run('trn_1', NOW));
  t.match(first, [{ type: 'TaskRunQueued', data: { runId: 'trn_1', day: '2026-03-10', count: 1, slot: NOW } }]);
  t.same(decideQueueRun(day(first), run('trn_1', NOW)), [], 'the same run again decides nothing');
  const second = decideQueueRun(day(first), run('trn_2'));
  t.match(second, [{ data: { count: 2, source: 'manual', slot: null } }]);
  const refused = refusal(() => decideQueueRun(day([...first, ...second]), run('trn_3')));
  t.equal(refused.code, 'task_run_limit_reached');
});

t.test('one-off jobs of a day: a run with no task, the workspace’s jobsPerDay exactly', async (t) => {
  const day = (events: TaskRunEvent[]): TaskRunDayState =>
    events.reduce(taskRunDayAggregate.evolve, taskRunDayAggregate.initialState);
  const job = (runId: string) => ({ runId, settings: { ...SETTINGS, owner: OWNER }, jobsPerDay: 2, now: NOW });
  const first = decideQueueJob(day([]), job('trn_1'));
  t.match(first, [
    {
      type: 'TaskRunQueued',
      data: { runId: 'trn_1', taskId: null, source: 'job', day: '2026-03-10', count: 1, slot: null, messageId: null },
    },
  ]);
  t.same(decideQueueJob(day(first), job('trn_1')), [], 'the same job again decides nothing');
  const second = decideQueueJob(day(first), job('trn_2'));
  t.match(second, [{ data: { count: 2 } }]);
  const refused = refusal(() => decideQueueJob(day([...first, ...second]), job('trn_3')));
  t.match(refused, { code: 'task_run_limit_reached', message: /2 one-off jobs today/ });
});

t.test('a plan lowered below the active tasks: the newest past it paused with plan_limit', async (t) => {
  const state = given([created('tsk_1'), created('tsk_2', true), created('tsk_3'), created('tsk_4')]);
  t.same(decidePauseBeyondPlan(state, { limits: { tasks: 9, active: 1 }, now: NOW }), [
    { type: 'TaskPaused', data: { taskId: 'tsk_3', reason: 'plan_limit', pausedAt: NOW } },
    { type: 'TaskPaused', data: { taskId: 'tsk_4', reason: 'plan_limit', pausedAt: NOW } },
  ]);
  t.same(decidePauseBeyondPlan(state, { limits: { tasks: 9, active: 3 }, now: NOW }), [], 'within: nothing');
});
