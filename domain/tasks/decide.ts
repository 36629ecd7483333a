import { fail } from '../shared/errors.ts';
import type { RUN_SOURCES, RunSettings, TaskEvent, TaskOwner, TaskRunEvent, TaskSettings } from './events.ts';
import type { TaskRunDayState, TasksState } from './state.ts';

export const TASK_NAME_MAX = 120;
export const TASK_INSTRUCTION_MAX = 8000;
export const MAIL_ADDRESSES_MAX = 25;
export const FILTER_TEXT_MAX = 200;
export const MAX_RUNS_PER_DAY = { min: 1, max: 500, default: 50 } as const;
export const MAX_STEPS = { min: 1, max: 60, default: 20 } as const;
/** Consecutive failed runs that pause a task with reason `failures`. */
export const FAILURES_TO_PAUSE = 5;

/**
 * The plan's numbers (the spec leaves them unshown): tasks a workspace may hold, how many of them
 * may be active, and how many one-off jobs it may start per UTC day. Configured (`TASKS_MAX`,
 * `TASKS_ACTIVE_MAX`, `TASK_JOBS_PER_DAY`), handed in by the command.
 */
export interface TaskLimits {
  tasks: number;
  active: number;
  jobsPerDay: number;
}
export const DEFAULT_TASK_LIMITS: TaskLimits = { tasks: 100, active: 20, jobsPerDay: 20 };
/** The numbers the tasks' own stream decides on. */
export type TaskCountLimits = Pick<TaskLimits, 'tasks' | 'active'>;

const activeCount = (state: TasksState) => [...state.tasks.values()].filter((t) => t.status === 'active').length;

function checkActiveRoom(state: TasksState, limits: TaskCountLimits): void {
  if (activeCount(state) >= limits.active)
    fail(
      'task_active_limit_reached',
      `The plan covers ${limits.active} active tasks; pause or delete one first, or create this one paused.`,
      null,
    );
}

export interface CreateTask {
  taskId: string;
  owner: TaskOwner;
  settings: TaskSettings;
  paused: boolean;
  limits: TaskCountLimits;
  now: string;
}

/** A paused task does not count against the active tasks; every task counts against the tasks. */
export function decideCreateTask(state: TasksState, cmd: CreateTask): TaskEvent[] {
  if (state.tasks.size >= cmd.limits.tasks)
    fail('task_limit_reached', `The plan covers ${cmd.limits.tasks} tasks; delete one first.`, null);
  if (!cmd.paused) checkActiveRoom(state, cmd.limits);
  return [
    {
      type: 'TaskCreated',
      data: { ...cmd.settings, taskId: cmd.taskId, owner: cmd.owner, paused: cmd.paused, createdAt: cmd.now },
    },
  ];
}

const taskOf = (state: TasksState, taskId: string) =>
  state.tasks.get(taskId) ?? fail('task_not_found', 'No such task.', 'id');

/** The whole settings after the change; nothing changed decides nothing. */
export function decideUpdateTask(
  state: TasksState,
  cmd: { taskId: string; settings: TaskSettings; now: string },
): TaskEvent[] {
  const {
    taskId: _,
    owner: __,
    status: ___,
    pausedReason: ____,
    failuresInRow: _____,
    endedRuns: ______,
    ...stored
  } = taskOf(state, cmd.taskId);
  if (canonical(stored) === canonical(cmd.settings)) return [];
  return [{ type: 'TaskUpdated', data: { ...cmd.settings, taskId: cmd.taskId, updatedAt: cmd.now } }];
}

/**
 * JSON with keys in order, so two equal settings compare equal whatever order their keys came in
 * (a jsonb column gives them back in its own order).
 */
export const canonical = (value: unknown): string =>
  JSON.stringify(value, (_, v) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort()) : v,
  );

/** Pausing a paused task decides nothing, whatever its reason. */
export function decidePauseTask(state: TasksState, cmd: { taskId: string; now: string }): TaskEvent[] {
  if (taskOf(state, cmd.taskId).status === 'paused') return [];
  return [{ type: 'TaskPaused', data: { taskId: cmd.taskId, reason: 'user', pausedAt: cmd.now } }];
}

/** Within the plan's active tasks, else 403 `task_active_limit_reached`; an active task stays as it is. */
export function decideResumeTask(
  state: TasksState,
  cmd: { taskId: string; limits: TaskCountLimits; now: string },
): TaskEvent[] {
  if (taskOf(state, cmd.taskId).status === 'active') return [];
  checkActiveRoom(state, cmd.limits);
  return [{ type: 'TaskResumed', data: { taskId: cmd.taskId, resumedAt: cmd.now } }];
}

/**
 * The plan covers fewer active tasks than are active (its limit was lowered): the tasks past it
 * are paused with `plan_limit`, the ones created first staying active. Within it, nothing.
 */
export function decidePauseBeyondPlan(state: TasksState, cmd: { limits: TaskCountLimits; now: string }): TaskEvent[] {
  const active = [...state.tasks.values()].filter((t) => t.status === 'active');
  return active.slice(cmd.limits.active).map((t) => ({
    type: 'TaskPaused',
    data: { taskId: t.taskId, reason: 'plan_limit', pausedAt: cmd.now },
  }));
}

export function decideDeleteTask(state: TasksState, cmd: { taskId: string; now: string }): TaskEvent[] {
  taskOf(state, cmd.taskId);
  return [{ type: 'TaskDeleted', data: { taskId: cmd.taskId, deletedAt: cmd.now } }];
}

/** `YYYY-MM-DD` of an instant, UTC: the day a run counts in. */
export const runDayOf = (now: string): string => now.slice(0, 10);

/**
 * The day a run counts in: a scheduled run's slot's, so a slot retried after midnight is still
 * known for queued; any other run's, the day it is queued.
 */
export const countedDayOf = (run: { slot: string | null; now: string }): string => runDayOf(run.slot ?? run.now);

export interface QueueRun {
  runId: string;
  taskId: string;
  source: (typeof RUN_SOURCES)[number];
  /** A schedule's instant; null for mail and manual runs. */
  slot: string | null;
  /** The arriving message of a mail-triggered run; null for the others. */
  messageId: string | null;
  maxRunsPerDay: number;
  settings: RunSettings;
  now: string;
}

/**
 * A run counts against the task's `maxRunsPerDay` of its UTC day: past it, 409
 * `task_run_limit_reached`. A run id already queued decides nothing: scheduled and mail runs have
 * ids digested from their slot or message, so a job repeated by the bus queues its run once.
 */
export function decideQueueRun(state: TaskRunDayState, cmd: QueueRun): TaskRunEvent[] {
  return queued(
    state,
    cmd,
    cmd.maxRunsPerDay,
    `The task has run ${cmd.maxRunsPerDay} times today (its maxRunsPerDay); runs start again at 00:00 UTC.`,
  );
}

/**
 * A one-off job: a run with no task, counted against the workspace's jobs of the UTC day (the
 * plan's `jobsPerDay`): past it, 409 `task_run_limit_reached`.
 */
export function decideQueueJob(
  state: TaskRunDayState,
  cmd: { runId: string; settings: RunSettings; jobsPerDay: number; now: string },
): TaskRunEvent[] {
  return queued(
    state,
    { ...cmd, taskId: null, source: 'job', slot: null, messageId: null },
    cmd.jobsPerDay,
    `The workspace has started ${cmd.jobsPerDay} one-off jobs today (the plan's limit); jobs start again at 00:00 UTC.`,
  );
}

function queued(
  state: TaskRunDayState,
  run: Omit<QueueRun, 'taskId' | 'maxRunsPerDay'> & { taskId: string | null },
  limit: number,
  refusal: string,
): TaskRunEvent[] {
  if (state.runIds.has(run.runId)) return [];
  if (state.count >= limit) fail('task_run_limit_reached', refusal, null);
  return [
    {
      type: 'TaskRunQueued',
      data: {
        runId: run.runId,
        taskId: run.taskId,
        day: countedDayOf(run),
        count: state.count + 1,
        source: run.source,
        slot: run.slot,
        messageId: run.messageId,
        settings: run.settings,
        queuedAt: run.now,
      },
    },
  ];
}

/**
 * A run of the task ended. Failed runs in a row are counted (a success starts again from 0; a
 * failure that is not the task's, `counted` false, leaves the count); the `FAILURES_TO_PAUSE`-th
 * pauses an active task with `failures`. A deleted task, or an end told before, decides nothing.
 */
export function decideRunEnded(
  state: TasksState,
  cmd: { taskId: string; runId: string; status: 'succeeded' | 'failed'; counted: boolean; now: string },
): TaskEvent[] {
  const task = state.tasks.get(cmd.taskId);
  if (!task || task.endedRuns.includes(cmd.runId)) return [];
  const failuresInRow = cmd.status === 'succeeded' ? 0 : cmd.counted ? task.failuresInRow + 1 : task.failuresInRow;
  const ended: TaskEvent = {
    type: 'TaskRunEnded',
    data: {
      taskId: cmd.taskId,
      runId: cmd.runId,
      status: cmd.status,
      counted: cmd.counted,
      failuresInRow,
      endedAt: cmd.now,
    },
  };
  if (task.status !== 'active' || failuresInRow < FAILURES_TO_PAUSE) return [ended];
  return [ended, { type: 'TaskPaused', data: { taskId: cmd.taskId, reason: 'failures', pausedAt: cmd.now } }];
}
