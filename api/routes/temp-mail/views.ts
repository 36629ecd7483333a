import { z } from 'zod';
import { MailAddress, type MessageSummary } from '../../../domain/messages/summary.ts';

export const tempInboxView = z.object({
  object: z.literal('temp_inbox'),
  id: z.string(),
  address: z.string(),
  createdAt: z.string(),
  expiresAt: z.string(),
});

/** The create's answer: the only time the token is shown. */
export const createdTempInboxView = tempInboxView.extend({
  token: z.string().describe('The access token that reads the inbox; shown only here, kept only as a hash.'),
});

export const tempInboxMessageView = z.object({
  object: z.literal('temp_inbox_message'),
  id: z.string(),
  inboxId: z.string(),
  mailFrom: z.string().describe('The envelope sender (MAIL FROM); empty for the null sender.'),
  from: MailAddress.nullable(),
  replyTo: z.array(MailAddress),
  to: z.array(MailAddress),
  cc: z.array(MailAddress),
  subject: z.string(),
  date: z.string().nullable(),
  messageId: z.string().nullable(),
  snippet: z.string(),
  headers: z.array(z.object({ name: z.string(), value: z.string() })),
  attachments: z.array(
    z.object({ filename: z.string().nullable(), contentType: z.string(), size: z.number().int(), inline: z.boolean() }),
  ),
  size: z.number().int(),
  receivedAt: z.string(),
});

export const tempInboxViewOf = (row: { id: string; address: string; created_at: Date; expires_at: Date }) => ({
  object: 'temp_inbox' as const,
  id: row.id,
  address: row.address,
  createdAt: row.created_at.toISOString(),
  expiresAt: row.expires_at.toISOString(),
});

export const tempInboxMessageViewOf = (row: {
  id: string;
  inbox_id: string;
  mail_from: string;
  size: number;
  summary: MessageSummary;
  received_at: Date;
}): z.infer<typeof tempInboxMessageView> => ({
  object: 'temp_inbox_message',
  id: row.id,
  inboxId: row.inbox_id,
  mailFrom: row.mail_from,
  from: row.summary.from,
  replyTo: row.summary.replyTo,
  to: row.summary.to,
  cc: row.summary.cc,
  subject: row.summary.subject,
  date: row.summary.date,
  messageId: row.summary.messageId,
  snippet: row.summary.snippet,
  headers: row.summary.headers,
  attachments: row.summary.attachments.map((a) => ({
    filename: a.filename,
    contentType: a.contentType,
    size: a.size,
    inline: a.inline,
  })),
  size: row.size,
  receivedAt: row.received_at.toISOString(),
});
