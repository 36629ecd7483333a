import type { Generated } from 'kysely';
import type { Json, NullableTimestamp } from '../../projections/projector.ts';

/**
 * The lanes' guard (guard.ts): final answers and complaints per lane and day, and per lane whether
 * it is paused, what its last resume left in the counts of that day, and a pause owed.
 */
export interface SendingLaneGuardTables {
  sending_lane_guard_days: {
    workspace_id: string;
    stream: string;
    day: string;
    sent: number;
    bounced: number;
    complained: number;
  };
  sending_lane_guard: {
    id: string;
    workspace_id: string;
    stream: string;
    paused: Generated<boolean>;
    since_day: string | null;
    base_sent: Generated<number>;
    base_bounced: Generated<number>;
    base_complained: Generated<number>;
    trip: Json<{ reason: string; rate: number; sent: number; bounced: number; complained: number }> | null;
    enqueued_at: NullableTimestamp;
    claims: Generated<number>;
  };
}
