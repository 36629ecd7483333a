import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/**
 * The due work of outbound delivery (schedule.ts): one row per message and recipient domain, the
 * unit direct delivery hands to one destination. `open` holds the recipients on that domain not
 * yet delivered or bounced; the row goes when it is empty, or when the message is cancelled.
 */
export interface EmailDeliveryTables {
  email_delivery_work: {
    id: string;
    workspace_id: string;
    email_id: string;
    domain: string;
    open: string[];
    next_attempt_at: Timestamp;
    enqueued_at: NullableTimestamp;
    /** Counts claims, so each job names the claim it was made for (a stale duplicate finds nothing). */
    claims: Generated<number>;
  };
}
