import type { Generated } from 'kysely';
import type { RUN_SOURCES, RunSettings, Trigger } from '../../domain/tasks/events.ts';
import type { Json, NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The scheduler's copy of the tasks (schedule.ts): what a due run is queued with, and when. */
export interface TaskScheduleTables {
  task_schedules: {
    task_id: string;
    workspace_id: string;
    trigger: Json<Trigger>;
    settings: Json<RunSettings>;
    max_runs_per_day: number;
    active: boolean;
    /** The schedule's next instant while the task is active on a schedule; null otherwise. */
    next_run_at: NullableTimestamp;
    enqueued_at: NullableTimestamp;
    /** Moves with every change of `next_run_at`: a job for an older one is stale. */
    seq: Generated<number>;
  };
  /** Runs arriving mail starts, until the worker has queued them (then the row goes). */
  task_mail_runs: {
    /** The run's id: a digest of task and message. */
    id: string;
    task_id: string;
    workspace_id: string;
    message_id: string;
    enqueued_at: NullableTimestamp;
  };
}

/** The runs the assistant works (run-work.ts, runner.ts): one row per queued run until it ends. */
export interface TaskRunWorkTables {
  task_run_work: {
    id: string;
    workspace_id: string;
    /** Null for a one-off job. */
    task_id: string | null;
    source: (typeof RUN_SOURCES)[number];
    message_id: string | null;
    /** The settings the run was queued with. */
    settings: Json<RunSettings>;
    done: Generated<boolean>;
    due_at: Timestamp;
    /** Put aside until an approval is decided (or times out at `due_at`). */
    waiting: Generated<boolean>;
    enqueued_at: NullableTimestamp;
    /** Moves when a job takes the run: a job of an older one is stale. */
    seq: Generated<number>;
  };
}

/** The notices a task's `notify` asks for (notices.ts): each run's setting, and the mails owed. */
export interface TaskNoticeTables {
  task_notice_runs: {
    run_id: string;
    workspace_id: string;
    /** Null for a one-off job. */
    task_id: string | null;
    notify: string;
    owner_kind: string;
    owner_id: string | null;
  };
  task_notice_mails: {
    /** The log position of the event that owed it. */
    position: string;
    workspace_id: string;
    run_id: string;
    kind: string;
    detail: string | null;
    attempts: Generated<number>;
    next_attempt_at: Timestamp;
    enqueued_at: NullableTimestamp;
    last_error: string | null;
    sent_at: NullableTimestamp;
  };
}
