import type { RunError } from '../../domain/task-runs/events.ts';
import type { RUN_SOURCES, RunSettings, TaskSettings, Toolkit, Trigger } from '../../domain/tasks/events.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** The tables of the tasks read model (projector.ts). */
export interface TasksTables {
  tasks: {
    workspace_id: string;
    id: string;
    name: string;
    instruction: string;
    trigger: Json<Trigger>;
    autonomy: TaskSettings['autonomy'];
    toolkits: Json<Toolkit[]>;
    model: TaskSettings['model'];
    notify: TaskSettings['notify'];
    max_runs_per_day: number;
    max_steps: number;
    status: 'active' | 'paused';
    paused_reason: 'user' | 'failures' | 'plan_limit' | null;
    owner_kind: 'apiKey' | 'oauth';
    owner_id: string | null;
    /** The UTC day of the last queued run, and how many runs that day had: `heldUntil`. */
    runs_day: string | null;
    runs_day_count: number;
    /** The newest queued run: `lastRunStatus` is its status. */
    last_run_id: string | null;
    last_run_status: string | null;
    pending_approvals: number;
    created_at: Timestamp;
    /** The last change of settings or status: the list's order ("most recently changed"). */
    updated_at: Timestamp;
  };
  /** Every run of a task, kept after the task is deleted. */
  task_runs: {
    workspace_id: string;
    id: string;
    /** Null for a one-off job. */
    task_id: string | null;
    source: (typeof RUN_SOURCES)[number];
    slot: NullableTimestamp;
    message_id: string | null;
    settings: Json<RunSettings>;
    queued_at: Timestamp;
    status: 'queued' | 'running' | 'waiting' | 'succeeded' | 'failed';
    started_at: NullableTimestamp;
    finished_at: NullableTimestamp;
    /** The model's last word, when the run succeeded. */
    summary: string | null;
    error: Json<RunError> | null;
    /** Steps taken, and AI actions spent on its turns. */
    steps: number;
    actions: number;
  };
  /** A run's steps: each turn of the model (`model`) and each tool call made (`tool`), in order. */
  task_run_steps: {
    run_id: string;
    step: number;
    workspace_id: string;
    kind: 'model' | 'tool';
    turn: number | null;
    content: string | null;
    /** `refused`: past the turn's cap, not made (absent on the calls made). */
    tool_calls: Json<{ id: string; name: string; arguments: string; refused?: true }[]> | null;
    call_id: string | null;
    name: string | null;
    arguments: string | null;
    result: string | null;
    error: Json<RunError> | null;
    actions: number;
    at: Timestamp;
  };
  /** Calls of runs that waited for a person, and the decision. */
  task_approvals: {
    /** `tap_`: a digest of run and call. */
    id: string;
    workspace_id: string;
    /** Null for a call of a one-off job. */
    task_id: string | null;
    run_id: string;
    call_id: string;
    tool: string;
    arguments: string;
    /** `expired`: the run ended while the call waited (its approval timed out). */
    status: 'pending' | 'approved' | 'denied' | 'expired';
    requested_at: Timestamp;
    decided_at: NullableTimestamp;
  };
}
