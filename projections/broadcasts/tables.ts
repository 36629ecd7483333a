import type { BroadcastStatus } from '../../domain/broadcasts/state.ts';
import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../projector.ts';

/** The broadcasts read model (projector.ts): each broadcast with its progress, and its emails. */
export interface BroadcastsTables {
  broadcasts: {
    workspace_id: string;
    id: string;
    name: string | null;
    status: BroadcastStatus;
    from_address: string;
    template_id: string;
    subject: string | null;
    audience_ids: string[];
    scheduled_at: NullableTimestamp;
    created_at: Timestamp;
    started_at: NullableTimestamp;
    completed_at: NullableTimestamp;
    cancelled_at: NullableTimestamp;
    /** Taken at the start; null before. */
    recipients: number | null;
    /** Emails accepted with their recipient queued (handed to delivery). */
    sent: number;
    /** Recipients suppressed at acceptance, or refused by the send's checks (known at completion). */
    failed: number;
    delivered: number;
    bounced: number;
    complained: number;
    opened: number;
    clicked: number;
    unsubscribed: number;
  };
  /** One row per email of a broadcast, so the emails' later events find their broadcast; flags count each once. */
  broadcast_emails: {
    email_id: string;
    workspace_id: string;
    broadcast_id: string;
    recipient: string;
    accepted_at: Timestamp;
    delivered: Generated<boolean>;
    bounced: Generated<boolean>;
    complained: Generated<boolean>;
    opened: Generated<boolean>;
    clicked: Generated<boolean>;
    unsubscribed: Generated<boolean>;
  };
}
