import { fail } from '../shared/errors.ts';
import type { RunError, TaskRunStepEvent } from './events.ts';
import { approvalOf, isFinished, type RunToolCall, type TaskRunState } from './state.ts';

interface RunRef {
  runId: string;
  /** Null for a one-off job. */
  taskId: string | null;
  now: string;
}

const running = (state: TaskRunState) => {
  if (isFinished(state)) fail('task_run_finished', 'The run has already finished.');
  if (state.status === 'queued') fail('task_run_not_started', 'The run has not started.');
};

/** A queued run starts once; a started or finished one decides nothing. */
export function decideStartRun(state: TaskRunState, cmd: RunRef): TaskRunStepEvent[] {
  if (state.status !== 'queued') return [];
  return [{ type: 'TaskRunStarted', data: { runId: cmd.runId, taskId: cmd.taskId, startedAt: cmd.now } }];
}

/**
 * The model's turn, numbered after the steps taken. `afterStep` is the count of steps the caller
 * saw: a turn decided on an older view (another process took a step meanwhile) is refused
 * (`task_run_step_taken`), so two processes never both go on with one run. Of its calls the first
 * `made` (all when absent) are to be made; the rest are refused with the turn, in its one append,
 * so no process can make them later.
 */
export function decideTakeTurn(
  state: TaskRunState,
  cmd: RunRef & { afterStep: number; actions: number; content: string | null; toolCalls: RunToolCall[]; made?: number },
): TaskRunStepEvent[] {
  running(state);
  if (state.steps !== cmd.afterStep) fail('task_run_step_taken', 'Another step of the run was taken meanwhile.');
  return [
    {
      type: 'TaskRunTurnTaken',
      data: {
        runId: cmd.runId,
        taskId: cmd.taskId,
        step: state.steps + 1,
        turn: state.turns.length + 1,
        actions: cmd.actions,
        content: cmd.content,
        toolCalls: cmd.toolCalls,
        ...(cmd.made !== undefined && cmd.made < cmd.toolCalls.length ? { made: cmd.made } : {}),
        at: cmd.now,
      },
    },
  ];
}

/** A call of the last turn that has neither started nor finished, so no process is making it. */
function openCall(state: TaskRunState, callId: string): RunToolCall {
  running(state);
  const turn = state.turns.at(-1);
  const call = turn?.toolCalls.find((c) => c.id === callId);
  if (!turn || !call) fail('task_run_step_taken', 'The call is not one of the last turn.');
  if (turn.started.has(callId) || turn.results.has(callId))
    fail('task_run_step_taken', 'The call was already made or is being made.');
  return call;
}

/** A call waits for a person (the task's autonomy): asked once per call. */
export function decideRequestApproval(
  state: TaskRunState,
  cmd: RunRef & { callId: string; approvalId: string },
): TaskRunStepEvent[] {
  const call = openCall(state, cmd.callId);
  if (approvalOf(state, cmd.callId)) return [];
  return [
    {
      type: 'TaskRunApprovalRequested',
      data: {
        runId: cmd.runId,
        taskId: cmd.taskId,
        approvalId: cmd.approvalId,
        callId: call.id,
        name: call.name,
        arguments: call.arguments,
        requestedAt: cmd.now,
      },
    },
  ];
}

/**
 * A person approves or denies a waiting call: once (409 `task_approval_decided`), while the run
 * goes on (409 `task_run_finished`); an approval the run never asked for is 404.
 */
export function decideApproval(
  state: TaskRunState,
  cmd: RunRef & { approvalId: string; decision: 'approved' | 'denied' },
): TaskRunStepEvent[] {
  const approval = state.approvals.get(cmd.approvalId);
  if (!approval) fail('task_approval_not_found', 'No such approval of this task.', 'approvalId');
  if (approval.status !== 'pending') fail('task_approval_decided', `The call was already ${approval.status}.`);
  if (isFinished(state)) fail('task_run_finished', 'The run has already finished; nothing waits for this approval.');
  return [
    {
      type: 'TaskRunApprovalDecided',
      data: {
        runId: cmd.runId,
        taskId: cmd.taskId,
        approvalId: cmd.approvalId,
        callId: approval.callId,
        decision: cmd.decision,
        decidedAt: cmd.now,
      },
    },
  ];
}

/** A write is about to be made: once, by one process. */
export function decideStartToolCall(state: TaskRunState, cmd: RunRef & { callId: string }): TaskRunStepEvent[] {
  const call = openCall(state, cmd.callId);
  return [
    {
      type: 'TaskRunToolCallStarted',
      data: { runId: cmd.runId, taskId: cmd.taskId, callId: call.id, name: call.name, at: cmd.now },
    },
  ];
}

/**
 * A call's outcome. A write must have been started (`write`), by this process: a call that was
 * started is finished only by the one that started it, which is the one that holds `write`.
 */
export function decideFinishToolCall(
  state: TaskRunState,
  cmd: RunRef & { callId: string; write: boolean; result: string | null; error: RunError | null },
): TaskRunStepEvent[] {
  running(state);
  const turn = state.turns.at(-1);
  const call = turn?.toolCalls.find((c) => c.id === cmd.callId);
  if (!turn || !call || turn.results.has(cmd.callId))
    fail('task_run_step_taken', 'The call is not open in the last turn.');
  if (cmd.write !== turn.started.has(cmd.callId))
    fail('task_run_step_taken', 'The call was started by another process, or not at all.');
  return [
    {
      type: 'TaskRunToolCallFinished',
      data: {
        runId: cmd.runId,
        taskId: cmd.taskId,
        step: state.steps + 1,
        callId: call.id,
        name: call.name,
        arguments: call.arguments,
        result: cmd.error ? null : cmd.result,
        error: cmd.error,
        at: cmd.now,
      },
    },
  ];
}

/** The model's last word; a finished run decides nothing. */
export function decideSucceedRun(state: TaskRunState, cmd: RunRef & { summary: string | null }): TaskRunStepEvent[] {
  if (isFinished(state)) return [];
  return [
    {
      type: 'TaskRunSucceeded',
      data: { runId: cmd.runId, taskId: cmd.taskId, summary: cmd.summary, finishedAt: cmd.now },
    },
  ];
}

/** A run fails once: a finished run decides nothing (the first outcome stands). */
export function decideFailRun(state: TaskRunState, cmd: RunRef & { error: RunError }): TaskRunStepEvent[] {
  if (isFinished(state)) return [];
  return [
    { type: 'TaskRunFailed', data: { runId: cmd.runId, taskId: cmd.taskId, error: cmd.error, finishedAt: cmd.now } },
  ];
}
