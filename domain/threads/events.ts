import { z } from 'zod';
import { Authentication } from '../messages/authentication.ts';
import { MessageSummary } from '../messages/summary.ts';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * A conversation in one mailbox, one stream per thread: the messages that joined it (arriving
 * mail, and mail the mailbox sent; imported mail will join through the same threading) and what
 * people did to it. The raw message is in the blob store under `raw.sha256`; the events carry the parsed
 * summary only (architecture decision 12).
 */

/** Labels every mailbox has. `sent` and `drafts` follow from the messages and cannot be set. */
export const SYSTEM_LABELS = ['inbox', 'archive', 'spam', 'trash', 'sent', 'drafts'] as const;
export type SystemLabel = (typeof SYSTEM_LABELS)[number];
export const SETTABLE_LABELS = ['inbox', 'archive', 'spam', 'trash'] as const;
export type SettableLabel = (typeof SETTABLE_LABELS)[number];
export const isSystemLabel = (name: string): name is SystemLabel => (SYSTEM_LABELS as readonly string[]).includes(name);
/** A system label a thread can be moved to (not `sent` or `drafts`). */
export const isSettableLabel = (name: string): name is SettableLabel =>
  (SETTABLE_LABELS as readonly string[]).includes(name);

/**
 * Where mail is filed: an address of the workspace, or a domain's catch-all (`*@<domain>`, no
 * address id). Allowlists narrow by `address` and `domain`.
 */
export const Mailbox = z.object({
  addressId: z.string().nullable(),
  address: z.string(),
  domainId: z.string(),
  domain: z.string(),
});
export type Mailbox = z.infer<typeof Mailbox>;

export const THREADED_BY = ['new', 'message-id', 'in-reply-to', 'references', 'referenced-by', 'subject'] as const;

export const MessageReceived = defineEvent(
  'MessageReceived',
  z.object({
    threadId: z.string(),
    /** Ours (`mes_`); the header's is `summary.messageId`. */
    messageId: z.string(),
    mailbox: Mailbox,
    /** The envelope: MAIL FROM (empty for the null sender) and the RCPT TO addresses filed here. */
    mailFrom: z.string(),
    rcptTo: z.array(z.string()),
    client: z.object({ ip: z.string(), helo: z.string() }),
    /** The stored message: our trace lines, then the bytes as they arrived. */
    raw: z.object({ sha256: z.string(), size: z.number().int() }),
    summary: MessageSummary,
    authentication: Authentication,
    spam: z.object({
      spam: z.boolean(),
      reasons: z.array(z.enum(['dmarc_reject', 'dmarc_quarantine', 'filter'])),
      score: z.number().nullable(),
    }),
    /** The threading rule that placed it (domain/messages/threading.ts). */
    threadedBy: z.enum(THREADED_BY),
    /** The subject as threads compare it, kept for the subject fallback's lookups. */
    normalisedSubject: z.string(),
    /** Where the thread is filed after this message. */
    label: z.enum(SETTABLE_LABELS),
    receivedAt: z.string(),
  }),
);

/**
 * Mail the mailbox sent (an `EmailAccepted` from its address, filed by processes/threads), in the
 * thread threading picks like an arrival's. The summary is parsed from the composed message, with
 * the Bcc recipients, which the message does not carry, from the acceptance. `label` is where the
 * thread is filed after it: a thread opened by sent mail is out of the inbox (`archive`), and a
 * send never moves a thread.
 */
export const MessageSent = defineEvent(
  'MessageSent',
  z.object({
    threadId: z.string(),
    messageId: z.string(),
    /** The sent email (`EmailAccepted`). */
    emailId: z.string(),
    mailbox: Mailbox,
    /** The return path the message goes out with. */
    mailFrom: z.string(),
    raw: z.object({ sha256: z.string(), size: z.number().int() }),
    summary: MessageSummary,
    threadedBy: z.enum(THREADED_BY),
    normalisedSubject: z.string(),
    label: z.enum(SETTABLE_LABELS),
    sentAt: z.string(),
  }),
);

/**
 * A message from a mailbox import (domain/mailbox-imports), filed through the same threading as
 * arrivals and sends. Quiet: nothing reacts to it (no rules, forwards, contacts or webhooks).
 * `direction` is `sent` for mail the mailbox sent (labelled Sent, or from its own address);
 * `label` is where the thread is filed after it (the import's options decided the message's own
 * place, labelOnImport the thread's). `importKey` is the dedupe key (Message-ID and content hash):
 * a thread holding it already files nothing, so a resumed import never files a message twice.
 * `at` is the message's own date (its `Date:` header, else when it was imported).
 */
export const MessageImported = defineEvent(
  'MessageImported',
  z.object({
    threadId: z.string(),
    messageId: z.string(),
    mailbox: Mailbox,
    importId: z.string(),
    importKey: z.string(),
    direction: z.enum(['received', 'sent']),
    raw: z.object({ sha256: z.string(), size: z.number().int() }),
    summary: MessageSummary,
    threadedBy: z.enum(THREADED_BY),
    normalisedSubject: z.string(),
    label: z.enum(SETTABLE_LABELS),
    unread: z.boolean(),
    at: z.string(),
  }),
);

/**
 * The message answers mail we sent (its In-Reply-To or References name a sent message's
 * Message-ID): what `email.replied` tells. Decided with the arrival, since a mapper sees one event.
 */
export const SentEmailReplied = defineEvent(
  'SentEmailReplied',
  z.object({
    threadId: z.string(),
    messageId: z.string(),
    emailId: z.string(),
    mailbox: Mailbox,
    from: z.string().nullable(),
    subject: z.string(),
    receivedAt: z.string(),
  }),
);

export const ThreadMarked = defineEvent(
  'ThreadMarked',
  z.object({ threadId: z.string(), unread: z.boolean(), at: z.string() }),
);

export const ThreadMoved = defineEvent(
  'ThreadMoved',
  z.object({ threadId: z.string(), from: z.enum(SETTABLE_LABELS), to: z.enum(SETTABLE_LABELS), at: z.string() }),
);

/** Custom labels (`lbl_` ids of the thread's mailbox) put on and taken off. */
export const ThreadLabelsChanged = defineEvent(
  'ThreadLabelsChanged',
  z.object({ threadId: z.string(), added: z.array(z.string()), removed: z.array(z.string()), at: z.string() }),
);

/** Deleted for good (from the trash). The blobs stay: the store keeps no references (receiving.md). */
export const ThreadDeleted = defineEvent('ThreadDeleted', z.object({ threadId: z.string(), at: z.string() }));

export const threadEvents = [
  MessageReceived,
  MessageSent,
  MessageImported,
  SentEmailReplied,
  ThreadMarked,
  ThreadMoved,
  ThreadLabelsChanged,
  ThreadDeleted,
];
export type ThreadEvent =
  | EventOf<typeof MessageReceived>
  | EventOf<typeof MessageSent>
  | EventOf<typeof MessageImported>
  | EventOf<typeof SentEmailReplied>
  | EventOf<typeof ThreadMarked>
  | EventOf<typeof ThreadMoved>
  | EventOf<typeof ThreadLabelsChanged>
  | EventOf<typeof ThreadDeleted>;
export type MessageReceivedData = EventOf<typeof MessageReceived>['data'];
export type MessageSentData = EventOf<typeof MessageSent>['data'];
export type MessageImportedData = EventOf<typeof MessageImported>['data'];

export const threadStream = (workspaceId: string, threadId: string) => `ws-${workspaceId}.thread-${threadId}`;
