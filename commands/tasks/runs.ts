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
import { type RunError, type TaskRunStepEvent, taskRunStream } from '../../domain/task-runs/events.ts';
import { taskRunAggregate, type RunToolCall, type TaskRunState } from '../../domain/task-runs/state.ts';
import { digestId } from '../../domain/shared/ids.ts';
import { decideRunEnded } from '../../domain/tasks/decide.ts';
import { tasksStream } from '../../domain/tasks/events.ts';
import { tasksAggregate } from '../../domain/tasks/state.ts';
import { type Actor, type CommandContext, execute, loadState } from '../execute.ts';

/** One run, as the assistant (processes/tasks/runner.ts) works it: every step through its stream. */
export interface RunRef {
  runId: string;
  /** Null for a one-off job. */
  taskId: string | null;
}

const onRun = (
  ctx: CommandContext,
  actor: Actor,
  run: RunRef,
  decide: (state: TaskRunState, ref: RunRef & { now: string }) => TaskRunStepEvent[],
) =>
  execute(ctx, actor, taskRunStream(actor.workspaceId, run.runId), taskRunAggregate, (s) =>
    decide(s, { ...run, now: new Date().toISOString() }),
  );

export async function loadRun(ctx: CommandContext, workspaceId: string, runId: string): Promise<TaskRunState> {
  return (await loadState(ctx, taskRunStream(workspaceId, runId), taskRunAggregate)).state;
}

export const startRun = (ctx: CommandContext, actor: Actor, run: RunRef) => onRun(ctx, actor, run, decideStartRun);

/** `afterStep`: the steps the caller saw; another step taken since refuses (`task_run_step_taken`). */
export const takeTurn = (
  ctx: CommandContext,
  actor: Actor,
  run: RunRef,
  turn: { afterStep: number; actions: number; content: string | null; toolCalls: RunToolCall[]; made?: number },
) => onRun(ctx, actor, run, (s, ref) => decideTakeTurn(s, { ...ref, ...turn }));

export const startToolCall = (ctx: CommandContext, actor: Actor, run: RunRef, callId: string) =>
  onRun(ctx, actor, run, (s, ref) => decideStartToolCall(s, { ...ref, callId }));

export const finishToolCall = (
  ctx: CommandContext,
  actor: Actor,
  run: RunRef,
  outcome: { callId: string; write: boolean; result: string | null; error: RunError | null },
) => onRun(ctx, actor, run, (s, ref) => decideFinishToolCall(s, { ...ref, ...outcome }));

/** The call waits for a person; its approval's id is a digest of run and call (asked once). */
export const requestApproval = (ctx: CommandContext, actor: Actor, run: RunRef, callId: string) =>
  onRun(ctx, actor, run, (s, ref) =>
    decideRequestApproval(s, { ...ref, callId, approvalId: digestId('taskApproval', `${run.runId} ${callId}`) }),
  );

/** A person's decision on a waiting call (409 `task_approval_decided`, `task_run_finished`; 404). */
export const decideTaskApproval = (
  ctx: CommandContext,
  actor: Actor,
  run: RunRef,
  approvalId: string,
  decision: 'approved' | 'denied',
) => onRun(ctx, actor, run, (s, ref) => decideApproval(s, { ...ref, approvalId, decision }));

export const succeedRun = (ctx: CommandContext, actor: Actor, run: RunRef, summary: string | null) =>
  onRun(ctx, actor, run, (s, ref) => decideSucceedRun(s, { ...ref, summary }));

export const failRun = (ctx: CommandContext, actor: Actor, run: RunRef, error: RunError) =>
  onRun(ctx, actor, run, (s, ref) => decideFailRun(s, { ...ref, error }));

/**
 * Tells the task how its run ended (failed runs in a row; the fifth pauses it with `failures`).
 * Told again after a crash, it decides nothing.
 */
export async function recordRunEnded(
  ctx: CommandContext,
  actor: Actor,
  ended: { runId: string; taskId: string; status: 'succeeded' | 'failed'; counted: boolean },
): Promise<void> {
  await execute(ctx, actor, tasksStream(actor.workspaceId), tasksAggregate, (s) =>
    decideRunEnded(s, { ...ended, now: new Date().toISOString() }),
  );
}
