import { z } from 'zod';
import type { DraftContent } from '../../../domain/drafts/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { type DraftRow, findDraft } from '../../../projections/drafts/queries.ts';
import { lookup } from '../../lookups.ts';

export const draftView = z.object({
  object: z.literal('draft'),
  id: z.string(),
  from: z.string().describe('As written.'),
  address: z.string().describe('The mailbox the draft belongs to: the address of `from`, lower-cased.'),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
  replyTo: z.array(z.string()),
  subject: z.string().nullable(),
  text: z.string().nullable(),
  html: z.string().nullable(),
  signatureId: z.string().nullable(),
  attachments: z.array(
    z.object({
      fileId: z.string(),
      filename: z.string().nullable(),
      contentType: z.string(),
      size: z.number().int(),
    }),
  ),
  inReplyTo: z.string().nullable(),
  references: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});

export function viewDraft(row: DraftRow): z.infer<typeof draftView> {
  const c = row.content as DraftContent;
  return {
    object: 'draft',
    id: row.id,
    from: c.from,
    address: c.address,
    to: c.to,
    cc: c.cc,
    bcc: c.bcc,
    replyTo: c.replyTo,
    subject: c.subject,
    text: c.text,
    html: c.html,
    signatureId: c.signatureId,
    attachments: c.attachments,
    inReplyTo: c.inReplyTo,
    references: c.references,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
  };
}

export const draftOr404 = lookup(findDraft, {
  code: 'resource_not_found',
  message: 'No such draft.',
  param: 'id',
  pattern: idPatterns.draft,
});
