import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The tables of the forward consent mails (consent-mail.ts). */
export interface ConsentMailTables {
  /** The address each forward is of, as the mails name it. */
  consent_mail_addresses: {
    address_id: string;
    address: string;
  };
  /** One owed or sent consent mail per link. */
  consent_mails: {
    position: number;
    workspace_id: string;
    address_id: string;
    forward_id: string;
    nonce: string;
    destination: string;
    attempts: Generated<number>;
    next_attempt_at: Timestamp;
    enqueued_at: NullableTimestamp;
    last_error: string | null;
    sent_at: NullableTimestamp;
  };
}
