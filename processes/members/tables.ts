import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The tables of the invitation mails (invitation-mail.ts). */
export interface InvitationMailTables {
  /** The workspace each invitation is to, as the mails name it. */
  invitation_mail_workspaces: {
    workspace_id: string;
    name: string;
  };
  /** One owed or sent invitation mail per link (an invitation, or its refresh). */
  invitation_mails: {
    position: number;
    workspace_id: string;
    invitation_id: string;
    nonce: string;
    email: string;
    invited_at: Timestamp;
    attempts: Generated<number>;
    next_attempt_at: Timestamp;
    enqueued_at: NullableTimestamp;
    last_error: string | null;
    sent_at: NullableTimestamp;
  };
}
