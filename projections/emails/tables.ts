import type { Generated } from 'kysely';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** Where a message stands, derived from its events (projector.ts). */
export const EMAIL_STATUSES = [
  /** Waiting for its `scheduledAt`. */
  'scheduled',
  /** Accepted, delivery not yet started. */
  'queued',
  /** Delivery started; some recipient has no final answer yet (a deferral retries). */
  'sending',
  /** Every recipient attempted was delivered. */
  'delivered',
  /** Some recipients were delivered, some bounced. */
  'partially_bounced',
  /** Every recipient attempted bounced. */
  'bounced',
  /** Nothing to send: every recipient was suppressed. */
  'failed',
  'cancelled',
] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

export const RECIPIENT_STATUSES = ['queued', 'suppressed', 'deferred', 'delivered', 'bounced', 'complained'] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];

/** The tables of the emails read model (projector.ts). */
export interface EmailsTables {
  emails: {
    /** The mode's partition (domain/shared/partitions.ts). */
    workspace_id: string;
    id: string;
    message_id: string;
    from_address_id: string;
    from_domain_id: string;
    /** Lower-case; a narrowed credential sees mail from what it reaches, by address or domain name. */
    from_email: string;
    from_domain: string;
    from_name: string | null;
    reply_to: Json<string[]>;
    subject: string;
    status: EmailStatus;
    stream: string;
    source: string;
    mode: string;
    tags: Json<{ name: string; value: string }[]>;
    template_id: string | null;
    template_version_id: string | null;
    signature_id: string | null;
    in_reply_to: string | null;
    scheduled_at: NullableTimestamp;
    raw_sha256: string;
    raw_size: number;
    /** Accepted at. */
    created_at: Timestamp;
    cancelled_at: NullableTimestamp;
    sending_started_at: NullableTimestamp;
    updated_at: Timestamp;
    /** Opens and clicks seen through the tracking host, every recipient's (and those no recipient was named for). */
    opens: Generated<number>;
    clicks: Generated<number>;
    first_opened_at: NullableTimestamp;
    first_clicked_at: NullableTimestamp;
  };
  email_recipients: {
    workspace_id: string;
    email_id: string;
    /** In the order the message lists them (to, cc, bcc). */
    position: number;
    email: string;
    kind: string;
    status: RecipientStatus;
    /** Suppressed: the suppression's reason; bounced: `hard` or `expired`; complained: the feedback type. */
    reason: string | null;
    attempts: number;
    last_code: number | null;
    last_enhanced_code: string | null;
    last_response: string | null;
    updated_at: Timestamp;
    /** Opens and clicks of this recipient's (counted only when the message went to this one recipient). */
    opens: Generated<number>;
    clicks: Generated<number>;
    first_opened_at: NullableTimestamp;
    first_clicked_at: NullableTimestamp;
  };
  /** Every event of a message, each delivery attempt with its SMTP reply. */
  email_history: {
    workspace_id: string;
    email_id: string;
    /** The event's position in the log: orders the history and makes a replayed event a no-op. */
    position: string;
    type: string;
    recipient: string | null;
    at: Timestamp;
    detail: Json<Record<string, unknown>>;
  };
}
