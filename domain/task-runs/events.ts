import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * One run of a task as the assistant works it, on a stream of its own
 * (`ws-<workspaceId>.task-run-<runId>`): queued on the task's day stream (domain/tasks), then
 * started, its steps, and how it ended. Each step is numbered (`step`, from 1) in the order it
 * was taken: a turn of the model (`TaskRunTurnTaken`) and each tool call it asked for
 * (`TaskRunToolCallFinished`). A call that writes is recorded as started before it is made
 * (`TaskRunToolCallStarted`): a run found with a write started and not finished was cut off
 * midway, and is failed rather than made to write twice. A one-off job's run has no task
 * (`taskId` null).
 */

/** How a run ended, when it did not succeed: the spec's codes where it has one. */
export const RUN_FAILURES = [
  /** The model timed out, could not be reached, or answered with an HTTP error or nothing usable. */
  'model_unavailable',
  /** The workspace's AI actions of the UTC day were used up before a turn. */
  'ai_quota_exceeded',
  /** The model was still calling tools at its `maxSteps`-th turn. */
  'max_steps_reached',
  /** A write was started and the process making it stopped before recording its outcome. */
  'run_interrupted',
  /** The task's creator no longer has a credential to act under (revoked, expired, removed). */
  'owner_unavailable',
  /** No AI model is configured any more. */
  'ai_not_configured',
  /** A call waited for a person's approval longer than the runner waits (`approvalTimeoutMs`). */
  'approval_timed_out',
  /** The task was deleted before its queued run started, or while a call of it waited for an approval. */
  'task_deleted',
  /** Queued too long ago to start (`startWithinMs`): an outage, or runs queued before the assistant. */
  'run_expired',
] as const;
export type RunFailure = (typeof RUN_FAILURES)[number];

export const RunError = z.object({ code: z.string(), message: z.string() });
export type RunError = z.infer<typeof RunError>;

export const RecordedToolCall = z.object({ id: z.string(), name: z.string(), arguments: z.string() });

export const TaskRunStarted = defineEvent(
  'TaskRunStarted',
  z.object({ runId: z.string(), taskId: z.string().nullable(), startedAt: z.string() }),
);

/** A turn of the model: what it said and the calls it asked for, and the AI actions it cost. */
export const TaskRunTurnTaken = defineEvent(
  'TaskRunTurnTaken',
  z.object({
    runId: z.string(),
    taskId: z.string().nullable(),
    step: z.number().int().positive(),
    /** The turn's number among the run's turns, from 1: `maxSteps` counts these. */
    turn: z.number().int().positive(),
    actions: z.number().int().nonnegative(),
    content: z.string().nullable(),
    toolCalls: z.array(RecordedToolCall),
    /**
     * How many of `toolCalls`, the first, are made; those past it are refused with the turn
     * (`too_many_calls`) and are no steps. Absent: all (every turn recorded before the cap).
     */
    made: z.number().int().nonnegative().optional(),
    at: z.string(),
  }),
);

/** A call that writes is about to be made (only writes are recorded before: a read is made again). */
export const TaskRunToolCallStarted = defineEvent(
  'TaskRunToolCallStarted',
  z.object({ runId: z.string(), taskId: z.string().nullable(), callId: z.string(), name: z.string(), at: z.string() }),
);

/** A call's outcome: what the model is told (`result`, JSON text), or why it failed. */
export const TaskRunToolCallFinished = defineEvent(
  'TaskRunToolCallFinished',
  z.object({
    runId: z.string(),
    taskId: z.string().nullable(),
    step: z.number().int().positive(),
    callId: z.string(),
    name: z.string(),
    arguments: z.string(),
    result: z.string().nullable(),
    error: RunError.nullable(),
    at: z.string(),
  }),
);

/**
 * A call the task's autonomy does not let the assistant make alone waits for a person: the run
 * waits (`waiting`) until it is approved or denied.
 */
export const TaskRunApprovalRequested = defineEvent(
  'TaskRunApprovalRequested',
  z.object({
    runId: z.string(),
    taskId: z.string().nullable(),
    approvalId: z.string(),
    callId: z.string(),
    name: z.string(),
    arguments: z.string(),
    requestedAt: z.string(),
  }),
);

export const TaskRunApprovalDecided = defineEvent(
  'TaskRunApprovalDecided',
  z.object({
    runId: z.string(),
    taskId: z.string().nullable(),
    approvalId: z.string(),
    callId: z.string(),
    decision: z.enum(['approved', 'denied']),
    decidedAt: z.string(),
  }),
);

export const TaskRunSucceeded = defineEvent(
  'TaskRunSucceeded',
  z.object({
    runId: z.string(),
    taskId: z.string().nullable(),
    summary: z.string().nullable(),
    finishedAt: z.string(),
  }),
);

export const TaskRunFailed = defineEvent(
  'TaskRunFailed',
  z.object({ runId: z.string(), taskId: z.string().nullable(), error: RunError, finishedAt: z.string() }),
);

export const taskRunEvents = [
  TaskRunStarted,
  TaskRunTurnTaken,
  TaskRunToolCallStarted,
  TaskRunToolCallFinished,
  TaskRunApprovalRequested,
  TaskRunApprovalDecided,
  TaskRunSucceeded,
  TaskRunFailed,
];
export type TaskRunStepEvent =
  | EventOf<typeof TaskRunStarted>
  | EventOf<typeof TaskRunTurnTaken>
  | EventOf<typeof TaskRunToolCallStarted>
  | EventOf<typeof TaskRunToolCallFinished>
  | EventOf<typeof TaskRunApprovalRequested>
  | EventOf<typeof TaskRunApprovalDecided>
  | EventOf<typeof TaskRunSucceeded>
  | EventOf<typeof TaskRunFailed>;

export const taskRunStream = (workspaceId: string, runId: string) => `ws-${workspaceId}.task-run-${runId}`;
