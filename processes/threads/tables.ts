import type { Generated } from 'kysely';
import type { NullableTimestamp } from '../../projections/projector.ts';

/** Sent mail owed to its mailbox's threads (sent-mail.ts), until its `MessageSent` is in the log. */
export interface SentMailTables {
  sent_mail_filing: {
    email_id: string;
    workspace_id: string;
    address_id: string;
    address: string;
    domain_id: string;
    raw_sha256: string;
    raw_size: number;
    /** The Bcc recipients: the message itself does not name them. */
    bcc: string[];
    /** When it was sent: accepted, or its sending started when it was scheduled. Null: not yet. */
    sent_at: NullableTimestamp;
    /** When the filing is next tried. Null until it is sent. */
    due_at: NullableTimestamp;
    enqueued_at: NullableTimestamp;
    claims: Generated<number>;
  };
}
