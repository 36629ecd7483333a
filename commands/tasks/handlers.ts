import {
  decideCreateTask,
  decideDeleteTask,
  decidePauseBeyondPlan,
  decideQueueJob,
  decidePauseTask,
  decideQueueRun,
  decideResumeTask,
  decideUpdateTask,
  countedDayOf,
  runDayOf,
  type QueueRun,
  type TaskCountLimits,
} from '../../domain/tasks/decide.ts';
import {
  type RunSettings,
  taskJobDayStream,
  taskRunDayStream,
  tasksStream,
  type TaskOwner,
  type TaskSettings,
} from '../../domain/tasks/events.ts';
import { taskRunDayAggregate, tasksAggregate } from '../../domain/tasks/state.ts';
import { type Actor, type CommandContext, execute } from '../execute.ts';
import { newId } from '../ids.ts';

const stream = (actor: Actor) => tasksStream(actor.workspaceId);

/** Answers the new id. */
export async function createTask(
  ctx: CommandContext,
  actor: Actor,
  input: { owner: TaskOwner; settings: TaskSettings; paused: boolean; limits: TaskCountLimits },
  now: string,
): Promise<{ taskId: string }> {
  const taskId = newId.task();
  await execute(ctx, actor, stream(actor), tasksAggregate, (s) => decideCreateTask(s, { taskId, ...input, now }));
  return { taskId };
}

/** `settings` is the whole of them after the change: the caller merged the patch. */
export async function updateTask(
  ctx: CommandContext,
  actor: Actor,
  taskId: string,
  settings: TaskSettings,
  now: string,
): Promise<void> {
  await execute(ctx, actor, stream(actor), tasksAggregate, (s) => decideUpdateTask(s, { taskId, settings, now }));
}

export async function pauseTask(ctx: CommandContext, actor: Actor, taskId: string, now: string): Promise<void> {
  await execute(ctx, actor, stream(actor), tasksAggregate, (s) => decidePauseTask(s, { taskId, now }));
}

export async function resumeTask(
  ctx: CommandContext,
  actor: Actor,
  taskId: string,
  limits: TaskCountLimits,
  now: string,
): Promise<void> {
  await execute(ctx, actor, stream(actor), tasksAggregate, (s) => decideResumeTask(s, { taskId, limits, now }));
}

/** Pauses a workspace's active tasks past the plan's (`plan_limit`); answers how many. */
export async function pauseTasksBeyondPlan(
  ctx: CommandContext,
  workspaceId: string,
  limits: TaskCountLimits,
  now: string,
): Promise<number> {
  const actor: Actor = { workspaceId, kind: 'system', id: null };
  const { events } = await execute(ctx, actor, stream(actor), tasksAggregate, (s) =>
    decidePauseBeyondPlan(s, { limits, now }),
  );
  return events.length;
}

export async function deleteTask(ctx: CommandContext, actor: Actor, taskId: string, now: string): Promise<void> {
  await execute(ctx, actor, stream(actor), tasksAggregate, (s) => decideDeleteTask(s, { taskId, now }));
}

/**
 * Queues a run on the task's stream of the UTC day (409 `task_run_limit_reached` past its
 * `maxRunsPerDay`). Answers the run's id, or null when its schedule slot was already queued.
 */
export async function queueTaskRun(
  ctx: CommandContext,
  actor: Actor,
  run: Omit<QueueRun, 'now'>,
  now: string,
): Promise<string | null> {
  const day = taskRunDayStream(actor.workspaceId, run.taskId, countedDayOf({ slot: run.slot, now }));
  const { events } = await execute(ctx, actor, day, taskRunDayAggregate, (s) => decideQueueRun(s, { ...run, now }), {
    likelyNew: true,
  });
  return events[0]?.data.runId ?? null;
}

/**
 * Queues a one-off job (a run with no task) on the workspace's stream of jobs of the UTC day (409
 * `task_run_limit_reached` past `jobsPerDay`).
 */
export async function queueTaskJob(
  ctx: CommandContext,
  actor: Actor,
  job: { runId: string; settings: RunSettings; jobsPerDay: number },
  now: string,
): Promise<void> {
  await execute(
    ctx,
    actor,
    taskJobDayStream(actor.workspaceId, runDayOf(now)),
    taskRunDayAggregate,
    (s) => decideQueueJob(s, { ...job, now }),
    { likelyNew: true },
  );
}
