import type { Generated } from 'kysely';
import type { Json, NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The work of broadcasts (schedule.ts makes the runs, worker.ts takes the recipients and sends). */
export interface BroadcastWorkTables {
  broadcast_runs: {
    id: string;
    /** The broadcast's partition. */
    workspace_id: string;
    /** `scheduled`: not started; `sending`: recipients taken, pages going out; `done`: nothing more to do. */
    status: 'scheduled' | 'sending' | 'done';
    from_address: string;
    template_id: string;
    subject: string | null;
    audience_ids: string[];
    due_at: Timestamp;
    enqueued_at: NullableTimestamp;
    /** Counts the run's steps, so a duplicate job of a step taken already is a no-op. */
    seq: Generated<number>;
  };
  /** The recipients as of the start, one row each, in `seq` order; a row is sent once `sent_at` is set. */
  broadcast_recipients: {
    broadcast_id: string;
    seq: number;
    contact_id: string;
    email: string;
    /** The audience the contact was taken from, which its unsubscribe link leaves; null: the default audience. */
    audience_id: string | null;
    props: Json<Record<string, unknown>>;
    email_id: string | null;
    refusal_code: string | null;
    sent_at: NullableTimestamp;
  };
}
