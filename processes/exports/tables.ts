import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The work of exports (schedule.ts makes the runs, worker.ts writes the zips and deletes expired ones). */
export interface ExportWorkTables {
  export_runs: {
    id: string;
    workspace_id: string;
    /** `queued`: not begun; `running`: an attempt is writing; `done`: ready, failed, or nothing more to do. */
    status: 'queued' | 'running' | 'done';
    /** The attempt writing the zip: bumped when one begins, so an older one still running stops. */
    attempt: Generated<number>;
    /** The ready zip and until when it is kept; `file_deleted` once the retention removed it. */
    sha256: string | null;
    expires_at: NullableTimestamp;
    file_deleted: Generated<boolean>;
    due_at: Timestamp;
    /** Put on the bus at; an attempt under way moves it on as it writes (a heartbeat), so it is never taken twice. */
    enqueued_at: NullableTimestamp;
    seq: Generated<number>;
  };
}
