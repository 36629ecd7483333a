import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * A sent message's life, one stream per message. The accepting request (POST /emails, a batch
 * item, SMTP submission, an automation's send step) decides `EmailAccepted`; the delivery process
 * manager decides the rest. Content is not in the log: the composed, unsigned MIME message is in
 * the blob store under `raw.sha256` (events stay small, and the audit replay prints no bodies).
 */

/** The sending lanes: each has its own bounce and complaint rates and pauses alone. */
export const SENDING_STREAMS = ['transactional', 'broadcast'] as const;
export type SendingStream = (typeof SENDING_STREAMS)[number];

export const RECIPIENT_KINDS = ['to', 'cc', 'bcc'] as const;

/**
 * A recipient at acceptance: `queued` goes out; `suppressed` is dropped with `reason` (the
 * suppression's reason: `bounce`, `complaint`, `manual`, `unsubscribe`) and never attempted.
 */
const acceptedRecipient = z.object({
  email: z.string(),
  kind: z.enum(RECIPIENT_KINDS),
  status: z.enum(['queued', 'suppressed']),
  reason: z.string().nullable(),
});
export type AcceptedRecipient = z.infer<typeof acceptedRecipient>;

/** Who sent it: an address of the workspace (its id and its domain's id: grants and allowlists narrow by them). */
const sender = z.object({
  addressId: z.string(),
  domainId: z.string(),
  email: z.string(),
  name: z.string().nullable(),
});

export const EmailAccepted = defineEvent(
  'EmailAccepted',
  z.object({
    emailId: z.string(),
    /** The Message-ID header without angle brackets, chosen once so every retry carries it. */
    messageId: z.string(),
    from: sender,
    replyTo: z.array(z.string()),
    subject: z.string(),
    recipients: z.array(acceptedRecipient),
    stream: z.enum(SENDING_STREAMS),
    tags: z.array(z.object({ name: z.string(), value: z.string() })),
    /** The composed, unsigned message in the blob store; DKIM signing happens at each attempt. */
    raw: z.object({ sha256: z.string(), size: z.number().int() }),
    template: z.object({ id: z.string(), versionId: z.string() }).nullable(),
    signatureId: z.string().nullable(),
    /** The Message-ID (without brackets) this one answers; it threads with it. */
    inReplyTo: z.string().nullable(),
    /** Null: at once. Otherwise nothing is attempted before it, and cancelling is possible until then. */
    scheduledAt: z.string().nullable(),
    /** `test` keys' mail is recorded and never leaves the machine. */
    mode: z.enum(['live', 'test']),
    /** Where the send came from. */
    source: z.enum(['api', 'batch', 'submission', 'automation', 'broadcast', 'rule', 'task']),
    /** The broadcast it is one recipient's message of (source `broadcast`); absent on every other. */
    broadcastId: z.string().optional(),
    acceptedAt: z.string(),
  }),
);

/** A scheduled message taken back before its first attempt. */
export const EmailCancelled = defineEvent('EmailCancelled', z.object({ emailId: z.string(), cancelledAt: z.string() }));

/**
 * The delivery process manager takes the message in hand: from here it is going out and can no
 * longer be cancelled. Appended with the revision read, so it and a cancel cannot both win.
 */
export const EmailSendingStarted = defineEvent(
  'EmailSendingStarted',
  z.object({
    emailId: z.string(),
    startedAt: z.string(),
    /** Repeated from `EmailAccepted` so the `email.sent` webhook can say which message and be narrowed by the sender. */
    messageId: z.string().optional(),
    from: z.object({ addressId: z.string(), domainId: z.string(), email: z.string() }).optional(),
  }),
);

/**
 * One recipient's answer on one attempt (infra/outbound/delivery.ts `RecipientOutcome`). `from`
 * and `stream` are repeated here because webhook mappers and the lanes' counts see one event.
 */
const attempt = {
  emailId: z.string(),
  messageId: z.string(),
  from: z.object({ addressId: z.string(), domainId: z.string(), email: z.string() }),
  stream: z.enum(SENDING_STREAMS),
  recipient: z.string(),
  /** 1 for the first attempt at this recipient. */
  attempt: z.number().int().positive(),
  code: z.number().int().nullable(),
  enhancedCode: z.string().nullable(),
  response: z.string(),
  mx: z.string().nullable(),
  tls: z.boolean().nullable(),
  at: z.string(),
};

export const EmailRecipientDelivered = defineEvent('EmailRecipientDelivered', z.object(attempt));

export const EmailRecipientDeferred = defineEvent(
  'EmailRecipientDeferred',
  z.object({ ...attempt, nextAttemptAt: z.string() }),
);

/**
 * `hard`: a 5xx answer (the address gets a `bounce` suppression); `expired`: deferred past the
 * lifetime (4.4.7). `source: 'dsn'`: a delivery status notification (RFC 3464) that came back to
 * the return path after the recipient's server had taken the message (an asynchronous bounce; the
 * SMTP fields are the report's, `attempt` the delivered one); absent on the answers of our own
 * attempts, and on every event written before reports were read.
 */
export const EmailRecipientBounced = defineEvent(
  'EmailRecipientBounced',
  z.object({ ...attempt, bounce: z.enum(['hard', 'expired']), source: z.literal('dsn').optional() }),
);

/**
 * A DSN said a server past ours is still trying (RFC 3464 `delayed`, or a transient status): the
 * recipient keeps its standing; the report is kept in the message's history. `reportId` (a digest
 * of the parsed report) makes the same report, offered again, change nothing.
 */
export const EmailRecipientDelayReported = defineEvent(
  'EmailRecipientDelayReported',
  z.object({
    emailId: z.string(),
    messageId: z.string(),
    from: z.object({ addressId: z.string(), domainId: z.string(), email: z.string() }),
    stream: z.enum(SENDING_STREAMS),
    recipient: z.string(),
    reportId: z.string(),
    status: z.string().nullable(),
    diagnostic: z.string().nullable(),
    reportingMta: z.string().nullable(),
    willRetryUntil: z.string().nullable(),
    at: z.string(),
  }),
);

/**
 * A recipient's spam report about this message: an ARF feedback report (RFC 5965) of type `abuse`
 * or `fraud` that came back to the return path (commands/emails/reports.ts).
 */
export const EmailRecipientComplained = defineEvent(
  'EmailRecipientComplained',
  z.object({
    emailId: z.string(),
    messageId: z.string(),
    from: z.object({ addressId: z.string(), domainId: z.string(), email: z.string() }),
    stream: z.enum(SENDING_STREAMS),
    recipient: z.string(),
    feedbackType: z.string(),
    at: z.string(),
  }),
);

/**
 * Engagement seen through the sending domain's tracking host (only while it is `active`: the
 * open pixel and rewritten links exist only then). Privacy proxies and link scanners fetch too, so
 * an open or a click is a signal, not proof; `userAgent` is kept to tell them apart later, the
 * address it came from is not kept.
 */
const engagement = {
  emailId: z.string(),
  messageId: z.string(),
  from: z.object({ addressId: z.string(), domainId: z.string(), email: z.string() }),
  stream: z.enum(SENDING_STREAMS),
  recipient: z.string(),
  userAgent: z.string().nullable(),
  at: z.string(),
};

export const EmailOpened = defineEvent('EmailOpened', z.object(engagement));

/** `url` is the link's original target, as it was in the message before it was rewritten. */
export const EmailLinkClicked = defineEvent('EmailLinkClicked', z.object({ ...engagement, url: z.string() }));

export const emailEvents = [
  EmailAccepted,
  EmailCancelled,
  EmailSendingStarted,
  EmailRecipientDelivered,
  EmailRecipientDeferred,
  EmailRecipientBounced,
  EmailRecipientDelayReported,
  EmailRecipientComplained,
  EmailOpened,
  EmailLinkClicked,
];
export type EmailEvent =
  | EventOf<typeof EmailAccepted>
  | EventOf<typeof EmailCancelled>
  | EventOf<typeof EmailSendingStarted>
  | EventOf<typeof EmailRecipientDelivered>
  | EventOf<typeof EmailRecipientDeferred>
  | EventOf<typeof EmailRecipientBounced>
  | EventOf<typeof EmailRecipientDelayReported>
  | EventOf<typeof EmailRecipientComplained>
  | EventOf<typeof EmailOpened>
  | EventOf<typeof EmailLinkClicked>;

export const emailStream = (workspaceId: string, emailId: string) => `ws-${workspaceId}.email-${emailId}`;
