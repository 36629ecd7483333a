import { z } from 'zod';
import { attachmentFileId } from '../../../domain/files/events.ts';
import type { Authentication } from '../../../domain/messages/authentication.ts';
import type { MessageSummary } from '../../../domain/messages/summary.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findThread, type ThreadMessageRow, type ThreadRow } from '../../../projections/threads/queries.ts';
import { lookup } from '../../lookups.ts';

const address = z.object({ name: z.string().nullable(), address: z.string() });

export const threadView = z.object({
  object: z.literal('thread'),
  id: z.string(),
  address: z.string().describe('The mailbox: an address, or `*@<domain>` for a catch-all.'),
  addressId: z.string().nullable(),
  labels: z
    .array(z.string())
    .describe(
      'The system label the thread is filed under, then `sent` when the mailbox sent a message of it, then its ' +
        'custom labels (`lbl_` ids), in the order put on.',
    ),
  unread: z.boolean(),
  subject: z.string(),
  snippet: z.string().describe("The latest message's."),
  participants: z.array(z.string()),
  messageCount: z.number().int(),
  lastMessageAt: z.string(),
  createdAt: z.string(),
});

export const messageView = z.object({
  object: z.literal('message'),
  id: z.string(),
  threadId: z.string(),
  direction: z.enum(['received', 'sent']).describe('`sent`: the mailbox sent it (`emailId` is the email).'),
  emailId: z.string().nullable(),
  messageId: z.string().nullable().describe('The Message-ID header, without angle brackets.'),
  inReplyTo: z.array(z.string()),
  references: z.array(z.string()),
  from: address.nullable(),
  replyTo: z.array(address),
  to: z.array(address),
  cc: z.array(address),
  bcc: z.array(address).describe("Sent mail's Bcc recipients; an arrival names none."),
  subject: z.string(),
  date: z.string().nullable().describe('The Date header (the sender wrote it).'),
  receivedAt: z.string().describe('When it arrived, or was sent.'),
  snippet: z.string(),
  headers: z.array(z.object({ name: z.string(), value: z.string() })),
  attachments: z.array(
    z.object({
      fileId: z.string().describe('The attachment as a file: `GET /files/{fileId}/content` downloads it.'),
      filename: z.string().nullable(),
      contentType: z.string(),
      size: z.number().int(),
      contentId: z.string().nullable(),
      inline: z.boolean(),
    }),
  ),
  size: z.number().int(),
  envelope: z.object({ mailFrom: z.string() }).describe("A sent message's `mailFrom` is its return path."),
  authentication: z
    .object({
      spf: z.object({ result: z.string(), domain: z.string().nullable() }),
      dkim: z.array(
        z.object({
          result: z.string(),
          domain: z.string().nullable(),
          selector: z.string().nullable(),
          aligned: z.boolean(),
        }),
      ),
      dmarc: z
        .object({ result: z.string(), fromDomain: z.string().nullable(), policy: z.string().nullable() })
        .nullable(),
      arc: z.object({ result: z.string(), instance: z.number().int() }),
      header: z.string().describe('The Authentication-Results value.'),
    })
    .nullable()
    .describe('Null for sent mail.'),
  spam: z
    .object({ spam: z.boolean(), reasons: z.array(z.string()), score: z.number().nullable() })
    .nullable()
    .describe('Null for sent mail.'),
});

export const threadWithMessagesView = threadView.extend({ messages: z.array(messageView) });

export function viewThread(row: ThreadRow): z.infer<typeof threadView> {
  return {
    object: 'thread',
    id: row.id,
    address: row.address,
    addressId: row.address_id,
    labels: [row.label, ...(row.has_sent ? ['sent'] : []), ...row.custom_labels],
    unread: row.unread,
    subject: row.subject,
    snippet: row.snippet,
    participants: row.participants,
    messageCount: row.message_count,
    lastMessageAt: row.last_message_at.toISOString(),
    createdAt: row.created_at.toISOString(),
  };
}

export function viewMessage(row: ThreadMessageRow): z.infer<typeof messageView> {
  const s = row.summary as MessageSummary;
  const a = row.authentication as Authentication | null;
  return {
    object: 'message',
    id: row.id,
    threadId: row.thread_id,
    direction: row.direction,
    emailId: row.email_id,
    messageId: s.messageId,
    inReplyTo: s.inReplyTo,
    references: s.references,
    from: s.from,
    replyTo: s.replyTo,
    to: s.to,
    cc: s.cc,
    bcc: s.bcc,
    subject: s.subject,
    date: s.date,
    receivedAt: row.received_at.toISOString(),
    snippet: s.snippet,
    headers: s.headers,
    attachments: s.attachments.map(({ filename, contentType, size, contentId, inline }, part) => ({
      fileId: attachmentFileId(row.id, part),
      filename,
      contentType,
      size,
      contentId,
      inline,
    })),
    size: Number(row.raw_size),
    envelope: { mailFrom: row.mail_from },
    authentication: a && {
      spf: { result: a.spf.result, domain: a.spf.domain },
      dkim: a.dkim.map((d) => ({ result: d.result, domain: d.domain, selector: d.selector, aligned: d.aligned })),
      dmarc: a.dmarc ? { result: a.dmarc.result, fromDomain: a.dmarc.fromDomain, policy: a.dmarc.policy } : null,
      arc: a.arc,
      header: a.header,
    },
    spam: row.spam as z.infer<typeof messageView>['spam'],
  };
}

export const threadOr404 = lookup(findThread, {
  code: 'resource_not_found',
  message: 'No such thread.',
  param: 'id',
  pattern: idPatterns.thread,
});
