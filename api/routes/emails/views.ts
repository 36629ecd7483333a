import { z } from 'zod';
import type { AcceptedData } from '../../../domain/emails/decide.ts';
import { SENDING_STREAMS } from '../../../domain/emails/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import {
  findEmail,
  type EmailHistoryRow,
  type EmailRecipientRow,
  type EmailRow,
} from '../../../projections/emails/queries.ts';
import { EMAIL_STATUSES, RECIPIENT_STATUSES, type EmailStatus } from '../../../projections/emails/tables.ts';
import { lookup } from '../../lookups.ts';

/** Opens and clicks seen through the sending domain's tracking host (none while it is not `active`). */
const engagementFields = {
  opens: z.number().int().describe('Fetches of the open pixel (privacy proxies and scanners fetch too).'),
  clicks: z.number().int().describe('Clicks on tracked links.'),
  firstOpenedAt: z.string().nullable(),
  firstClickedAt: z.string().nullable(),
};

const engagementOf = (row: {
  opens: number;
  clicks: number;
  first_opened_at: Date | null;
  first_clicked_at: Date | null;
}) => ({
  opens: row.opens,
  clicks: row.clicks,
  firstOpenedAt: row.first_opened_at?.toISOString() ?? null,
  firstClickedAt: row.first_clicked_at?.toISOString() ?? null,
});

const NO_ENGAGEMENT = { opens: 0, clicks: 0, firstOpenedAt: null, firstClickedAt: null };

const recipientView = z
  .object({
    email: z.string(),
    kind: z.enum(['to', 'cc', 'bcc']),
    status: z.enum(RECIPIENT_STATUSES),
    reason: z
      .string()
      .nullable()
      .describe(
        'suppressed: the suppression reason (`bounce`, `complaint`, `manual`, `unsubscribe`); bounced: `hard` or `expired`; complained: the feedback type.',
      ),
    attempts: z.number().int(),
    lastResponse: z
      .object({ code: z.number().int().nullable(), enhancedCode: z.string().nullable(), message: z.string() })
      .nullable()
      .describe("The receiving server's last SMTP reply to this recipient."),
    ...engagementFields,
    updatedAt: z.string(),
  })
  .describe('Opens and clicks are counted per recipient only for a message to one recipient: one body goes to all.');

export const emailView = z.object({
  object: z.literal('email'),
  id: z.string(),
  messageId: z.string().describe('The Message-ID header, without angle brackets.'),
  from: z.object({ address: z.string(), name: z.string().nullable(), addressId: z.string() }),
  replyTo: z.array(z.string()),
  subject: z.string(),
  status: z.enum(EMAIL_STATUSES),
  stream: z.enum(SENDING_STREAMS).describe('The sending lane.'),
  source: z.enum(['api', 'batch', 'submission', 'automation', 'broadcast', 'rule', 'task']),
  mode: z.enum(['live', 'test']),
  tags: z.array(z.object({ name: z.string(), value: z.string() })),
  template: z.object({ id: z.string(), versionId: z.string() }).nullable(),
  signatureId: z.string().nullable(),
  inReplyTo: z.string().nullable(),
  scheduledAt: z.string().nullable(),
  size: z.number().int().describe('Bytes of the composed message, before signing.'),
  recipients: z.array(recipientView),
  ...engagementFields,
  createdAt: z.string(),
  cancelledAt: z.string().nullable(),
  updatedAt: z.string(),
});
export type EmailView = z.infer<typeof emailView>;

export const historyItemView = z.object({
  type: z
    .string()
    .describe(
      '`EmailAccepted`, `EmailCancelled`, `EmailSendingStarted`, `EmailRecipientDelivered`, `EmailRecipientDeferred`, `EmailRecipientBounced`, `EmailRecipientDelayReported`, `EmailRecipientComplained`, `EmailOpened`, `EmailLinkClicked`.',
    ),
  recipient: z.string().nullable(),
  at: z.string(),
  detail: z
    .record(z.string(), z.unknown())
    .describe(
      'Attempts: `attempt`, `code`, `enhancedCode`, `response`, `mx`, `tls` (and `nextAttemptAt`, `bounce`; `source: dsn` for a bounce a delivery report told of after delivery). Delay reports: `status`, `diagnostic`, `reportingMta`, `willRetryUntil`. Complaints: `feedbackType`. Opens and clicks: `userAgent` (and `url`, the link as written).',
    ),
});

export const emailWithHistoryView = emailView.extend({ history: z.array(historyItemView) });

/** How `EmailAccepted` leaves a message (the projector decides the same: projections/emails/projector.ts). */
export function statusAtAcceptance(d: AcceptedData): EmailStatus {
  if (!d.recipients.some((r) => r.status === 'queued')) return 'failed';
  return d.scheduledAt !== null ? 'scheduled' : 'queued';
}

/** The answer to a send, from its event: the read model holds the same, without a query to read it back. */
export function viewAccepted(d: AcceptedData): EmailView {
  return {
    object: 'email',
    id: d.emailId,
    messageId: d.messageId,
    from: { address: d.from.email, name: d.from.name, addressId: d.from.addressId },
    replyTo: d.replyTo,
    subject: d.subject,
    status: statusAtAcceptance(d),
    stream: d.stream,
    source: d.source,
    mode: d.mode,
    tags: d.tags,
    template: d.template,
    signatureId: d.signatureId,
    inReplyTo: d.inReplyTo,
    scheduledAt: d.scheduledAt,
    size: d.raw.size,
    recipients: d.recipients.map((r) => ({
      email: r.email,
      kind: r.kind,
      status: r.status,
      reason: r.reason,
      attempts: 0,
      lastResponse: null,
      ...NO_ENGAGEMENT,
      updatedAt: d.acceptedAt,
    })),
    ...NO_ENGAGEMENT,
    createdAt: d.acceptedAt,
    cancelledAt: null,
    updatedAt: d.acceptedAt,
  };
}

export function viewEmail(row: EmailRow, recipients: EmailRecipientRow[]): EmailView {
  return {
    object: 'email',
    id: row.id,
    messageId: row.message_id,
    from: { address: row.from_email, name: row.from_name, addressId: row.from_address_id },
    replyTo: row.reply_to,
    subject: row.subject,
    status: row.status,
    stream: row.stream as EmailView['stream'],
    source: row.source as EmailView['source'],
    mode: row.mode as EmailView['mode'],
    tags: row.tags,
    template:
      row.template_id && row.template_version_id ? { id: row.template_id, versionId: row.template_version_id } : null,
    signatureId: row.signature_id,
    inReplyTo: row.in_reply_to,
    scheduledAt: row.scheduled_at?.toISOString() ?? null,
    size: row.raw_size,
    recipients: recipients.map((r) => ({
      email: r.email,
      kind: r.kind as 'to' | 'cc' | 'bcc',
      status: r.status,
      reason: r.reason,
      attempts: r.attempts,
      lastResponse:
        r.last_response === null
          ? null
          : { code: r.last_code, enhancedCode: r.last_enhanced_code, message: r.last_response },
      ...engagementOf(r),
      updatedAt: r.updated_at.toISOString(),
    })),
    ...engagementOf(row),
    createdAt: row.created_at.toISOString(),
    cancelledAt: row.cancelled_at?.toISOString() ?? null,
    updatedAt: row.updated_at.toISOString(),
  };
}

export const viewHistory = (rows: EmailHistoryRow[]) =>
  rows.map((h) => ({ type: h.type, recipient: h.recipient, at: h.at.toISOString(), detail: h.detail }));

/** A message of another workspace, of the other mode, or from an address a narrowed credential does not reach: 404. */
export const emailOr404 = lookup(findEmail, {
  code: 'resource_not_found',
  message: 'No such email.',
  param: 'id',
  pattern: idPatterns.email,
});
