import type { SettableLabel } from '../../domain/threads/events.ts';
import type { Json, Timestamp } from '../projector.ts';

/** The tables of the threads read model (projector.ts). */
export interface ThreadsTables {
  threads: {
    workspace_id: string;
    id: string;
    /** The mailbox: an address, or `*@<domain>` for a catch-all. */
    address: string;
    address_id: string | null;
    domain_id: string;
    domain: string;
    label: SettableLabel;
    unread: boolean;
    /** A message of the thread was sent by the mailbox: the thread is under `sent`. */
    has_sent: boolean;
    /** The first message's subject, and the normalised one the subject fallback compares. */
    subject: string;
    normalised_subject: string;
    /** The latest message's. */
    snippet: string;
    /** Lower-case addresses of everyone who sent or received a message of the thread. */
    participants: string[];
    message_count: number;
    last_message_at: Timestamp;
    created_at: Timestamp;
    /** Custom labels (`lbl_` ids of the mailbox), in the order they were put on. */
    custom_labels: string[];
  };
  thread_messages: {
    workspace_id: string;
    id: string;
    thread_id: string;
    address: string;
    direction: 'received' | 'sent';
    /** The sent email (`em_`) of a sent message. */
    email_id: string | null;
    /** The Message-ID header, without brackets. */
    header_id: string | null;
    in_reply_to: string[];
    refs: string[];
    subject: string;
    from_address: string | null;
    summary: Json<unknown>;
    /** An arrival's; null for sent mail. */
    authentication: Json<unknown> | null;
    spam: Json<unknown> | null;
    raw_sha256: string;
    raw_size: number;
    mail_from: string;
    /** When it arrived, or was sent. */
    received_at: Timestamp;
    /** The event's position: messages of a thread list in the order they were filed. */
    position: string;
    /** Subject and participants as words, gathered into the thread's `search`. */
    search_words: string;
  };
  /** Custom labels of the mailboxes (domain/labels); here so a thread keeps only labels live in log order. */
  labels: {
    workspace_id: string;
    id: string;
    /** The mailbox's owner id (domain/shared/mailbox-owners.ts `mailboxOwnerOf`). */
    owner: string;
    address: string;
    domain: string;
    name: string;
    color: string | null;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
}
