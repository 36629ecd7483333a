import type { Generated } from 'kysely';
import type { RunSettings, Trigger } from '../../domain/tasks/events.ts';
import type { Json, NullableTimestamp } from '../../projections/projector.ts';

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
