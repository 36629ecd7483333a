import { z } from 'zod';
import { idPatterns } from '../../../domain/shared/ids.ts';
import {
  FILTER_TEXT_MAX,
  MAIL_ADDRESSES_MAX,
  MAX_RUNS_PER_DAY,
  MAX_STEPS,
  runDayOf,
  TASK_INSTRUCTION_MAX,
  TASK_NAME_MAX,
} from '../../../domain/tasks/decide.ts';
import {
  AUTONOMIES,
  CADENCES,
  MODELS,
  NOTIFY,
  PAUSED_REASONS,
  RUN_SOURCES,
  TOOLKITS,
  type TaskOwner,
  type TaskSettings,
  type Toolkit,
  Trigger,
} from '../../../domain/tasks/events.ts';
import { EVERY_DAY, nextScheduledRun } from '../../../domain/tasks/schedule.ts';
import type { Permission } from '../../../domain/shared/permissions.ts';
import {
  findTask,
  findTaskJob,
  type TaskApprovalRow,
  type TaskRow,
  type TaskRunRow,
  type TaskRunStepRow,
} from '../../../projections/tasks/queries.ts';
import type { Credential } from '../../credential.ts';
import { ApiError } from '../../errors/api-error.ts';
import { lookup } from '../../lookups.ts';
import { text, timeZone } from '../../schemas.ts';

const nonEmpty = (max: number) => text(max).refine((s) => s.length > 0, { message: 'must not be empty' });
const filterText = text(FILTER_TEXT_MAX)
  .nullable()
  .optional()
  .transform((s) => (s ? s : null));

/** A trigger as a request gives it: omitted parts take their defaults (also on update: a trigger replaces the old whole). */
export const triggerInput = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('schedule'),
    cadence: z.enum(CADENCES),
    everyHours: z
      .number()
      .int()
      .min(1)
      .max(12)
      .default(1)
      .describe('`hourly`: every this many hours from local midnight.'),
    hour: z.number().int().min(0).max(23).default(8),
    minute: z.number().int().min(0).max(59).default(0),
    weekdays: z
      .array(z.number().int().min(0).max(6))
      .min(1)
      .max(7)
      .refine((days) => new Set(days).size === days.length, { message: 'must not repeat a day' })
      .transform((days) => [...days].sort((a, b) => a - b))
      .default(EVERY_DAY)
      .describe('0 = Sunday to 6; `hourly` and `daily` run only on these days. Default every day.'),
    monthDay: z.number().int().min(1).max(28).default(1),
    timezone: timeZone.default('UTC'),
  }),
  z.strictObject({
    kind: z.literal('mail'),
    addresses: z
      .array(
        z
          .email()
          .max(320)
          .transform((s) => s.toLowerCase()),
      )
      .max(MAIL_ADDRESSES_MAX)
      .refine((a) => new Set(a).size === a.length, { message: 'must not repeat an address' })
      .default([])
      .describe('Addresses of the workspace whose arriving mail starts a run; empty: every address.'),
    senderContains: filterText.describe('Case-insensitive text the sender (name or address) contains.'),
    subjectContains: filterText.describe('Case-insensitive text the subject contains.'),
  }),
  z.strictObject({ kind: z.literal('manual') }),
]);

const settingsFields = {
  name: nonEmpty(TASK_NAME_MAX),
  instruction: nonEmpty(TASK_INSTRUCTION_MAX),
  trigger: triggerInput,
  autonomy: z.enum(AUTONOMIES),
  toolkits: z
    .array(z.enum(TOOLKITS))
    .refine((t) => new Set(t).size === t.length, { message: 'must not repeat a toolkit' }),
  model: z.enum(MODELS),
  notify: z.enum(NOTIFY),
  maxRunsPerDay: z.number().int().min(MAX_RUNS_PER_DAY.min).max(MAX_RUNS_PER_DAY.max),
  maxSteps: z.number().int().min(MAX_STEPS.min).max(MAX_STEPS.max),
};

export const DEFAULT_TOOLKITS: Toolkit[] = ['drafts', 'notes', 'knowledge'];

/** What a run works with, as the create body gives it (defaults included): a one-off job's body is these. */
const runFields = {
  instruction: settingsFields.instruction,
  autonomy: settingsFields.autonomy.default('organize'),
  toolkits: settingsFields.toolkits.default(DEFAULT_TOOLKITS),
  model: settingsFields.model.default('standard'),
  notify: settingsFields.notify.default('attention'),
  maxSteps: settingsFields.maxSteps.default(MAX_STEPS.default),
};

export const createBody = z.strictObject({
  name: settingsFields.name,
  trigger: settingsFields.trigger,
  ...runFields,
  maxRunsPerDay: settingsFields.maxRunsPerDay.default(MAX_RUNS_PER_DAY.default),
  paused: z.boolean().default(false),
});

/** A one-off job: the run settings of a task's create body, nothing else. */
export const jobBody = z.strictObject(runFields);

/** Only what changes; nothing at all is 422. */
export const patchBody = z
  .strictObject({
    name: settingsFields.name.optional(),
    instruction: settingsFields.instruction.optional(),
    trigger: settingsFields.trigger.optional(),
    autonomy: settingsFields.autonomy.optional(),
    toolkits: settingsFields.toolkits.optional(),
    model: settingsFields.model.optional(),
    notify: settingsFields.notify.optional(),
    maxRunsPerDay: settingsFields.maxRunsPerDay.optional(),
    maxSteps: settingsFields.maxSteps.optional(),
  })
  .refine((patch) => Object.values(patch).some((v) => v !== undefined), {
    message: 'send at least one field to change',
  });

/**
 * The scopes a task needs for its toolkits, besides the mail ones every task needs: a toolkit's
 * read and write scopes, where the vocabulary has them (docs/decisions/tasks.md).
 */
export const TOOLKIT_SCOPES: Record<Toolkit, readonly Permission[]> = {
  contacts: ['contacts:read', 'contacts:write'],
  audiences: ['audiences:read', 'audiences:write'],
  templates: ['templates:read', 'templates:write'],
  tracking: ['emails:read'],
  translate: [],
  files: ['files:read', 'files:write'],
  notes: [],
  drafts: ['drafts:read', 'drafts:write'],
  sent: ['emails:read', 'emails:send'],
  insights: ['emails:read'],
  subscriptions: ['contacts:read', 'contacts:write'],
  calendar: ['calendar:read', 'calendar:write'],
  knowledge: ['knowledge:read', 'knowledge:write'],
  connectors: ['connectors:read', 'connectors:use'],
  web: [],
};

/** Every task needs these to be created or changed (the mail toolkit every task has), and a one-off job to start. */
export const WRITE_SCOPES: readonly Permission[] = [
  'tasks:write',
  'threads:read',
  'threads:write',
  'emails:read',
  'emails:send',
  'labels:write',
];

/** A task's toolkits act under its creator's authority: the credential must hold each one's scopes (403 `insufficient_scope`). */
export function requireToolkitScopes(credential: Credential, toolkits: readonly Toolkit[]): void {
  for (const toolkit of toolkits)
    for (const scope of TOOLKIT_SCOPES[toolkit])
      if (!credential.scopes.includes(scope))
        throw new ApiError(
          'insufficient_scope',
          `The \`${toolkit}\` toolkit needs the \`${scope}\` scope.`,
          'toolkits',
        );
}

/** The credential a task's runs, or a job, act under: an API key, or the person of an OAuth app. */
export const ownerOf = (credential: Credential): TaskOwner => ({
  kind: credential.kind,
  id: credential.kind === 'apiKey' ? credential.id : (credential.userId ?? null),
});

export const taskView = z.object({
  object: z.literal('task'),
  id: z.string(),
  name: z.string(),
  instruction: z.string(),
  trigger: Trigger,
  autonomy: z.enum(AUTONOMIES),
  toolkits: z.array(z.enum(TOOLKITS)),
  model: z.enum(MODELS),
  notify: z.enum(NOTIFY),
  maxRunsPerDay: z.number().int(),
  maxSteps: z.number().int(),
  status: z.enum(['active', 'paused']),
  pausedReason: z.enum(PAUSED_REASONS).nullable(),
  nextRunAt: z.string().nullable().describe('When the schedule runs the task next; null unless active on a schedule.'),
  heldUntil: z
    .string()
    .nullable()
    .describe('Today’s runs reached `maxRunsPerDay`: none starts before this instant (00:00 UTC).'),
  lastRunStatus: z.string().nullable(),
  pendingApprovals: z.number().int(),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const settingsOf = (row: TaskRow): TaskSettings => ({
  name: row.name,
  instruction: row.instruction,
  trigger: row.trigger,
  autonomy: row.autonomy,
  toolkits: row.toolkits,
  model: row.model,
  notify: row.notify,
  maxRunsPerDay: row.max_runs_per_day,
  maxSteps: row.max_steps,
});

const nextUtcMidnight = (day: string) => new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString();

/** `nextRunAt` and `heldUntil` follow from the row and the time of the read. */
export function viewTask(row: TaskRow, now: Date = new Date()): z.infer<typeof taskView> {
  const heldUntil =
    row.runs_day === runDayOf(now.toISOString()) && row.runs_day_count >= row.max_runs_per_day
      ? nextUtcMidnight(row.runs_day)
      : null;
  const from = heldUntil ? new Date(Date.parse(heldUntil) - 1) : now;
  return {
    object: 'task',
    id: row.id,
    ...settingsOf(row),
    status: row.status,
    pausedReason: row.paused_reason,
    nextRunAt: row.status === 'active' ? nextScheduledRun(row.trigger, from) : null,
    heldUntil,
    lastRunStatus: row.last_run_status,
    pendingApprovals: row.pending_approvals,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

const runError = z.object({ code: z.string(), message: z.string() });

export const taskRunView = z.object({
  object: z.literal('task_run'),
  id: z.string(),
  taskId: z.string().nullable().describe('Null for a one-off job (`source` `job`).'),
  source: z.enum(RUN_SOURCES),
  status: z
    .enum(['queued', 'running', 'waiting', 'succeeded', 'failed'])
    .describe(
      '`queued` until the assistant takes the run, `running`, `waiting` while a call waits for an approval, then ' +
        '`succeeded` or `failed`.',
    ),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  summary: z.string().nullable().describe('The model’s last word, when the run succeeded.'),
  error: runError
    .nullable()
    .describe(
      'Why the run failed: `model_unavailable`, `ai_quota_exceeded`, `max_steps_reached`, `run_interrupted`, ' +
        '`owner_unavailable`, `ai_not_configured`, `approval_timed_out`, `task_deleted`, `run_expired`.',
    ),
  steps: z.number().int().describe('Steps taken: the model’s turns and the tool calls made.'),
  aiActions: z.number().int().describe('AI actions its turns spent (one each, ten with the `advanced` model).'),
  scheduledFor: z.string().nullable().describe('The schedule’s instant a scheduled run stands for.'),
  messageId: z.string().nullable().describe('The arriving message (`mes_`) that started a mail-triggered run.'),
  model: z.enum(MODELS),
  queuedAt: z.string(),
});

export const viewTaskRun = (row: TaskRunRow): z.infer<typeof taskRunView> => ({
  object: 'task_run',
  id: row.id,
  taskId: row.task_id,
  source: row.source,
  status: row.status,
  startedAt: row.started_at?.toISOString() ?? null,
  finishedAt: row.finished_at?.toISOString() ?? null,
  summary: row.summary,
  error: row.error,
  steps: row.steps,
  aiActions: row.actions,
  scheduledFor: row.slot?.toISOString() ?? null,
  messageId: row.message_id,
  model: row.settings.model,
  queuedAt: row.queued_at.toISOString(),
});

export const taskRunStepView = z.object({
  object: z.literal('task_run_step'),
  step: z.number().int().describe('From 1, in the order taken.'),
  kind: z.enum(['model', 'tool']).describe('A turn of the model, or a tool call it asked for.'),
  turn: z.number().int().nullable().describe('`model`: the turn’s number (`maxSteps` counts turns).'),
  content: z.string().nullable().describe('`model`: what the model said.'),
  toolCalls: z
    .array(
      z.object({
        id: z.string(),
        name: z.string(),
        arguments: z.string(),
        refused: z
          .boolean()
          .describe('Past the ten calls a turn makes: not made, no step; the model was told `too_many_calls`.'),
      }),
    )
    .nullable()
    .describe('`model`: the calls it asked for (arguments as the model wrote them).'),
  callId: z.string().nullable(),
  tool: z.string().nullable().describe('`tool`: the tool called.'),
  arguments: z.string().nullable(),
  result: z.string().nullable().describe('`tool`: what the model was told (JSON text).'),
  error: runError.nullable().describe('`tool`: why the call failed (the model was told).'),
  aiActions: z.number().int(),
  at: z.string(),
});

export const viewTaskRunStep = (row: TaskRunStepRow): z.infer<typeof taskRunStepView> => ({
  object: 'task_run_step',
  step: row.step,
  kind: row.kind,
  turn: row.turn,
  content: row.content,
  toolCalls: row.tool_calls?.map(({ refused, ...call }) => ({ ...call, refused: refused === true })) ?? null,
  callId: row.call_id,
  tool: row.name,
  arguments: row.arguments,
  result: row.result,
  error: row.error,
  aiActions: row.actions,
  at: row.at.toISOString(),
});

export const taskOr404 = lookup(findTask, {
  code: 'task_not_found',
  message: 'No such task.',
  param: 'id',
  pattern: idPatterns.task,
});

/** A one-off job is answered as a missing run: `task_run_not_found`. */
export const jobOr404 = lookup(findTaskJob, {
  code: 'task_run_not_found',
  message: 'No such one-off job.',
  param: 'id',
  pattern: idPatterns.taskRun,
});

export const idParams = z.strictObject({ id: z.string().max(400) });
export const READ_SCOPES: readonly Permission[] = ['tasks:read', 'threads:read', 'emails:read'];

export const taskApprovalView = z.object({
  object: z.literal('task_approval'),
  id: z.string(),
  taskId: z.string().nullable().describe('Null for a call of a one-off job.'),
  runId: z.string(),
  tool: z.string().describe('The tool the assistant asks to call.'),
  arguments: z.string().describe('Its arguments, as the model wrote them (JSON text).'),
  status: z
    .enum(['pending', 'approved', 'denied', 'expired'])
    .describe('`expired`: the run ended while the call waited (its approval timed out); it was not made.'),
  requestedAt: z.string(),
  decidedAt: z.string().nullable(),
});

export const viewTaskApproval = (row: TaskApprovalRow): z.infer<typeof taskApprovalView> => ({
  object: 'task_approval',
  id: row.id,
  taskId: row.task_id,
  runId: row.run_id,
  tool: row.tool,
  arguments: row.arguments,
  status: row.status,
  requestedAt: row.requested_at.toISOString(),
  decidedAt: row.decided_at?.toISOString() ?? null,
});
