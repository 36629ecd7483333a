import t from 'tap';
import { needsApproval } from '../../processes/tasks/tools.ts';
import {
  decideApproval,
  decideFailRun,
  decideFinishToolCall,
  decideRequestApproval,
  decideStartRun,
  decideStartToolCall,
  decideSucceedRun,
  decideTakeTurn,
} from '../../domain/task-runs/decide.ts';
import type { TaskRunStepEvent } from '../../domain/task-runs/events.ts';
import { taskRunAggregate, type TaskRunState } from '../../domain/task-runs/state.ts';
import { decideRunEnded } from '../../domain/tasks/decide.ts';
import type { TaskEvent } from '../../domain/tasks/events.ts';
import { tasksAggregate } from '../../domain/tasks/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-03-10T08:00:00.000Z';
const REF = { runId: 'trn_1', taskId: 'tsk_1', now: NOW };
const given = (events: TaskRunStepEvent[]): TaskRunState =>
  events.reduce(taskRunAggregate.evolve, taskRunAggregate.initialState);
const started: TaskRunStepEvent = { type: 'TaskRunStarted', data: { runId: 'trn_1', taskId: 'tsk_1', startedAt: NOW } };
const call = { id: 'call_1', name: 'label_thread', arguments: '{}' };
const turn = (step: number, calls = [call]): TaskRunStepEvent =>
  decideTakeTurn(given([started]), { ...REF, afterStep: 0, actions: 1, content: null, toolCalls: calls }).map((e) =>
    e.type === 'TaskRunTurnTaken' ? { ...e, data: { ...e.data, step } } : e,
  )[0]!;

t.test('a run starts once; a turn is numbered after the steps it was decided on', async (t) => {
  t.same(decideStartRun(given([]), REF), [started]);
  t.same(decideStartRun(given([started]), REF), [], 'started already: nothing');
  t.match(decideTakeTurn(given([started]), { ...REF, afterStep: 0, actions: 10, content: 'hi', toolCalls: [] }), [
    { type: 'TaskRunTurnTaken', data: { step: 1, turn: 1, actions: 10, content: 'hi' } },
  ]);
  t.equal(
    refusal(() =>
      decideTakeTurn(given([started, turn(1)]), { ...REF, afterStep: 0, actions: 1, content: null, toolCalls: [] }),
    ).code,
    'task_run_step_taken',
    'a turn decided on an older view of the run is refused',
  );
});

t.test('calls past the turn’s `made` are refused with it, and no process can make them', async (t) => {
  const calls = ['a', 'b', 'c'].map((id) => ({ id, name: 'list_labels', arguments: '{}' }));
  const [taken] = decideTakeTurn(given([started]), {
    ...REF,
    afterStep: 0,
    actions: 1,
    content: null,
    toolCalls: calls,
    made: 2,
  });
  t.match(taken, { type: 'TaskRunTurnTaken', data: { step: 1, made: 2, toolCalls: calls } });
  const state = given([started, taken!]);
  t.same([...state.turns[0]!.results.keys()], ['c'], 'the third is answered already');
  t.match(JSON.parse(state.turns[0]!.results.get('c')!), {
    error: { code: 'too_many_calls', message: /at most 2 calls/ },
  });
  t.equal(state.steps, 1, 'a refused call is no step');
  t.equal(refusal(() => decideStartToolCall(state, { ...REF, callId: 'c' })).code, 'task_run_step_taken');
  const [all] = decideTakeTurn(given([started]), {
    ...REF,
    afterStep: 0,
    actions: 1,
    content: null,
    toolCalls: calls,
    made: 3,
  });
  t.notOk('made' in all!.data, 'a turn whose calls are all made records no cap');
});

t.test('a write is started once, and finished only as started; a read is never started', async (t) => {
  const open = given([started, turn(1)]);
  const start = decideStartToolCall(open, { ...REF, callId: 'call_1' });
  t.match(start, [{ type: 'TaskRunToolCallStarted', data: { callId: 'call_1', name: 'label_thread' } }]);
  const making = given([started, turn(1), ...start]);
  t.equal(refusal(() => decideStartToolCall(making, { ...REF, callId: 'call_1' })).code, 'task_run_step_taken');
  const outcome = { callId: 'call_1', result: '{"ok":true}', error: null };
  t.equal(
    refusal(() => decideFinishToolCall(open, { ...REF, ...outcome, write: true })).code,
    'task_run_step_taken',
    'a write never started is not finished as one',
  );
  t.equal(
    refusal(() => decideFinishToolCall(making, { ...REF, ...outcome, write: false })).code,
    'task_run_step_taken',
    'a started write is not finished as a read (another process would be making it again)',
  );
  const done = decideFinishToolCall(making, { ...REF, ...outcome, write: true });
  t.match(done, [{ type: 'TaskRunToolCallFinished', data: { step: 2, callId: 'call_1', result: '{"ok":true}' } }]);
  const after = given([started, turn(1), ...start, ...done]);
  t.equal(after.steps, 2);
  t.equal(after.turns[0]?.results.get('call_1'), '{"ok":true}');
  t.equal(refusal(() => decideStartToolCall(after, { ...REF, callId: 'call_1' })).code, 'task_run_step_taken');
});

t.test('a run ends once: the first outcome stands', async (t) => {
  const failed = decideFailRun(given([started]), { ...REF, error: { code: 'model_unavailable', message: 'x' } });
  t.match(failed, [{ type: 'TaskRunFailed', data: { error: { code: 'model_unavailable' } } }]);
  const state = given([started, ...failed]);
  t.same(decideSucceedRun(state, { ...REF, summary: 'done' }), []);
  t.same(decideFailRun(state, { ...REF, error: { code: 'run_interrupted', message: 'y' } }), []);
  t.equal(
    refusal(() => decideTakeTurn(state, { ...REF, afterStep: 0, actions: 1, content: null, toolCalls: [] })).code,
    'task_run_finished',
  );
});

t.test('failed runs in a row: the fifth pauses an active task; success and resume start again', async (t) => {
  const created: TaskEvent = {
    type: 'TaskCreated',
    data: {
      taskId: 'tsk_1',
      owner: { kind: 'apiKey', id: 'key_1' },
      paused: false,
      createdAt: NOW,
      name: 'T',
      instruction: 'I',
      trigger: { kind: 'manual' },
      autonomy: 'organize',
      toolkits: [],
      model: 'standard',
      notify: 'attention',
      maxRunsPerDay: 50,
      maxSteps: 20,
    },
  };
  let events: TaskEvent[] = [created];
  const state = () => events.reduce(tasksAggregate.evolve, tasksAggregate.initialState);
  const end = (runId: string, status: 'succeeded' | 'failed', counted = true) => {
    const decided = decideRunEnded(state(), { taskId: 'tsk_1', runId, status, counted, now: NOW });
    events = [...events, ...decided];
    return decided;
  };
  for (const id of ['r1', 'r2', 'r3', 'r4']) t.equal(end(id, 'failed').length, 1);
  t.same(end('r4', 'failed'), [], 'an end told again decides nothing');
  t.match(end('q1', 'failed', false), [{ data: { failuresInRow: 4, counted: false } }], 'not counted: the row stays');
  t.match(end('r5', 'failed'), [
    { type: 'TaskRunEnded', data: { failuresInRow: 5 } },
    { type: 'TaskPaused', data: { reason: 'failures' } },
  ]);
  t.match(
    end('r6', 'failed'),
    [{ type: 'TaskRunEnded', data: { failuresInRow: 6 } }],
    'paused already: no pause again',
  );
  events = [...events, { type: 'TaskResumed', data: { taskId: 'tsk_1', resumedAt: NOW } }];
  t.match(end('r7', 'failed'), [{ data: { failuresInRow: 1 } }], 'a resume starts the count again');
  t.match(end('r8', 'succeeded'), [{ data: { failuresInRow: 0 } }]);
  t.same(decideRunEnded(state(), { taskId: 'tsk_x', runId: 'r9', status: 'failed', counted: true, now: NOW }), []);
});

t.test('approvals: asked once per call; decided once, while the run goes on', async (t) => {
  const ask = { ...REF, callId: 'call_1', approvalId: 'tap_1' };
  const open = given([started, turn(1)]);
  const asked = decideRequestApproval(open, ask);
  t.match(asked, [{ type: 'TaskRunApprovalRequested', data: { approvalId: 'tap_1', name: 'label_thread' } }]);
  const waiting = given([started, turn(1), ...asked]);
  t.equal(waiting.status, 'waiting');
  t.same(decideRequestApproval(waiting, ask), [], 'asked again after a crash: nothing');
  t.equal(
    refusal(() => decideApproval(waiting, { ...REF, approvalId: 'tap_x', decision: 'approved' })).code,
    'task_approval_not_found',
  );
  const approved = decideApproval(waiting, { ...REF, approvalId: 'tap_1', decision: 'approved' });
  t.match(approved, [{ type: 'TaskRunApprovalDecided', data: { callId: 'call_1', decision: 'approved' } }]);
  const decided = given([started, turn(1), ...asked, ...approved]);
  t.equal(decided.status, 'running');
  t.equal(
    refusal(() => decideApproval(decided, { ...REF, approvalId: 'tap_1', decision: 'denied' })).code,
    'task_approval_decided',
  );
  const ended = given([
    started,
    turn(1),
    ...asked,
    {
      type: 'TaskRunFailed',
      data: { runId: 'trn_1', taskId: 'tsk_1', error: { code: 'x', message: 'y' }, finishedAt: NOW },
    },
  ]);
  t.equal(
    refusal(() => decideApproval(ended, { ...REF, approvalId: 'tap_1', decision: 'approved' })).code,
    'task_run_finished',
  );
});

t.test('autonomy: ask makes every write wait, organize only sends, reply none', async (t) => {
  t.same(
    (['ask', 'organize', 'reply'] as const).map((a) => [
      needsApproval(a, 'read'),
      needsApproval(a, 'organize'),
      needsApproval(a, 'send'),
    ]),
    [
      [false, true, true],
      [false, false, true],
      [false, false, false],
    ],
  );
});
