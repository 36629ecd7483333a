import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * A workspace's tasks, one stream for all of them (`ws-<workspaceId>.tasks`): the plan's limits
 * on tasks and on active tasks are the workspace's, so one decision must see them all. What is
 * counted per day (runs) lives in streams of their own, one per task and UTC day, so a run being
 * queued never contends with an edit.
 */

export const TOOLKITS = [
  'contacts',
  'audiences',
  'templates',
  'tracking',
  'translate',
  'files',
  'notes',
  'drafts',
  'sent',
  'insights',
  'subscriptions',
  'calendar',
  'knowledge',
  'connectors',
  'web',
] as const;
export type Toolkit = (typeof TOOLKITS)[number];
export const AUTONOMIES = ['ask', 'organize', 'reply'] as const;
export const MODELS = ['standard', 'advanced'] as const;
export const NOTIFY = ['attention', 'always', 'never'] as const;
export const CADENCES = ['hourly', 'daily', 'monthly'] as const;
export const PAUSED_REASONS = ['user', 'failures', 'plan_limit'] as const;
/**
 * Where a run came from: its task's schedule, an arriving message, someone asking (run now), or a
 * one-off job (an instruction run once, without a saved task).
 */
export const RUN_SOURCES = ['schedule', 'mail', 'manual', 'job'] as const;

/** A schedule with every default filled in: what is stored, so a later change of defaults moves no task. */
export const ScheduleTrigger = z.object({
  kind: z.literal('schedule'),
  cadence: z.enum(CADENCES),
  everyHours: z.number().int(),
  hour: z.number().int(),
  minute: z.number().int(),
  /** 0 = Sunday to 6, ascending, without repeats; all seven when every day. */
  weekdays: z.array(z.number().int()),
  monthDay: z.number().int(),
  /** IANA zone, as the runtime lists it. */
  timezone: z.string(),
});
export type ScheduleTrigger = z.infer<typeof ScheduleTrigger>;

/** Arriving mail: filters are null when not given; with none, every message starts a run. */
export const MailTrigger = z.object({
  kind: z.literal('mail'),
  /** The workspace's addresses (lower-cased) whose mail starts a run; empty: all of them. */
  addresses: z.array(z.string()),
  senderContains: z.string().nullable(),
  subjectContains: z.string().nullable(),
});
export type MailTrigger = z.infer<typeof MailTrigger>;

export const ManualTrigger = z.object({ kind: z.literal('manual') });

export const Trigger = z.discriminatedUnion('kind', [ScheduleTrigger, MailTrigger, ManualTrigger]);
export type Trigger = z.infer<typeof Trigger>;

/** Everything of a task an update can change: merged, then checked whole. */
export const TaskSettings = z.object({
  name: z.string(),
  instruction: z.string(),
  trigger: Trigger,
  autonomy: z.enum(AUTONOMIES),
  toolkits: z.array(z.enum(TOOLKITS)),
  model: z.enum(MODELS),
  notify: z.enum(NOTIFY),
  maxRunsPerDay: z.number().int(),
  maxSteps: z.number().int(),
});
export type TaskSettings = z.infer<typeof TaskSettings>;

/** Who made the task: its runs act under this credential's current authority (the assistant, later). */
export const TaskOwner = z.object({ kind: z.enum(['apiKey', 'oauth']), id: z.string().nullable() });
export type TaskOwner = z.infer<typeof TaskOwner>;

export const TaskCreated = defineEvent(
  'TaskCreated',
  TaskSettings.extend({
    taskId: z.string(),
    owner: TaskOwner,
    /** `paused` true on create: paused with reason `user`. */
    paused: z.boolean(),
    createdAt: z.string(),
  }),
);
/** The whole settings after the change: a reader needs no earlier event to know them. */
export const TaskUpdated = defineEvent(
  'TaskUpdated',
  TaskSettings.extend({ taskId: z.string(), updatedAt: z.string() }),
);
export const TaskPaused = defineEvent(
  'TaskPaused',
  z.object({ taskId: z.string(), reason: z.enum(PAUSED_REASONS), pausedAt: z.string() }),
);
export const TaskResumed = defineEvent('TaskResumed', z.object({ taskId: z.string(), resumedAt: z.string() }));
export const TaskDeleted = defineEvent('TaskDeleted', z.object({ taskId: z.string(), deletedAt: z.string() }));

/** What a run works with, copied when it is queued: a later update leaves started runs as they were. */
export const RunSettings = TaskSettings.pick({
  instruction: true,
  autonomy: true,
  toolkits: true,
  model: true,
  notify: true,
  maxSteps: true,
}).extend({ owner: TaskOwner });
export type RunSettings = z.infer<typeof RunSettings>;
/** One mapping for every source of runs (run now, schedule, mail), so they queue the same settings. */
export const runSettingsOf = (s: TaskSettings, owner: TaskOwner): RunSettings => ({
  instruction: s.instruction,
  autonomy: s.autonomy,
  toolkits: s.toolkits,
  model: s.model,
  notify: s.notify,
  maxSteps: s.maxSteps,
  owner,
});

/**
 * A run of a task waits for the assistant. Counted on the task's stream of the UTC day (`count`:
 * the day's runs after this one), so the task's `maxRunsPerDay` holds under any concurrency. A
 * scheduled run names its `slot` (the schedule's instant), a mail-triggered one the arriving
 * message (`messageId`, ours); a run id is queued at most once. A one-off job is a run with no
 * task (`taskId` null, `source` `job`), counted on the workspace's stream of jobs of the day.
 */
export const TaskRunQueued = defineEvent(
  'TaskRunQueued',
  z.object({
    runId: z.string(),
    taskId: z.string().nullable(),
    /** `YYYY-MM-DD`, UTC. */
    day: z.string(),
    count: z.number().int().positive(),
    source: z.enum(RUN_SOURCES),
    slot: z.string().nullable(),
    messageId: z.string().nullable(),
    settings: RunSettings,
    queuedAt: z.string(),
  }),
);

/**
 * A run of the task ended (domain/task-runs), told to the task so it counts failed runs in a row:
 * `failuresInRow` is the count after this run. A success sets it to 0; a failure the task is not to
 * blame for (`counted` false: the workspace's AI actions were used up) leaves it as it was.
 */
export const TaskRunEnded = defineEvent(
  'TaskRunEnded',
  z.object({
    taskId: z.string(),
    runId: z.string(),
    status: z.enum(['succeeded', 'failed']),
    counted: z.boolean(),
    failuresInRow: z.number().int().nonnegative(),
    endedAt: z.string(),
  }),
);

export const taskEvents = [TaskCreated, TaskUpdated, TaskPaused, TaskResumed, TaskDeleted, TaskRunQueued, TaskRunEnded];
export type TaskEvent =
  | EventOf<typeof TaskCreated>
  | EventOf<typeof TaskUpdated>
  | EventOf<typeof TaskPaused>
  | EventOf<typeof TaskResumed>
  | EventOf<typeof TaskDeleted>
  | EventOf<typeof TaskRunEnded>;
export type TaskRunEvent = EventOf<typeof TaskRunQueued>;

export const tasksStream = (workspaceId: string) => `ws-${workspaceId}.tasks`;
export const taskRunDayStream = (workspaceId: string, taskId: string, day: string) =>
  `ws-${workspaceId}.task-runs-${taskId}-${day}`;
/** The workspace's one-off jobs of a UTC day: their daily limit is the workspace's. */
export const taskJobDayStream = (workspaceId: string, day: string) => `ws-${workspaceId}.task-jobs-${day}`;
