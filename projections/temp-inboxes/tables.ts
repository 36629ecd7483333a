import type { MessageSummary } from '../../domain/messages/summary.ts';
import type { Json, Timestamp } from '../projector.ts';

/** Disposable inboxes and their mail (no workspace: they are the service's; the token hash is the reach). */
export interface TempInboxesTables {
  temp_inboxes: {
    id: string;
    address: string;
    token_hash: string;
    created_at: Timestamp;
    expires_at: Timestamp;
  };
  temp_inbox_messages: {
    id: string;
    inbox_id: string;
    mail_from: string;
    raw_sha256: string;
    size: number;
    summary: Json<MessageSummary>;
    received_at: Timestamp;
  };
}
