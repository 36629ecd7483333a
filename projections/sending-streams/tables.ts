import type { NullableTimestamp } from '../projector.ts';

/** The lanes as GET /sending/streams shows them: counts per lane and day, and each lane's pause. */
export interface SendingStreamsTables {
  sending_stream_days: {
    workspace_id: string;
    stream: string;
    day: string;
    sent: number;
    bounced: number;
    complained: number;
  };
  sending_stream_states: {
    workspace_id: string;
    stream: string;
    paused: boolean;
    reason: string | null;
    paused_at: NullableTimestamp;
    locked_until: NullableTimestamp;
    resumed_at: NullableTimestamp;
  };
}
