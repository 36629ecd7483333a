import { z } from 'zod';
import { MAILBOX_IMPORT_FORMATS, type MailboxImportFormat } from '../../../domain/mailbox-imports/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findMailboxImport, type MailboxImportRow } from '../../../projections/mailbox-imports/queries.ts';
import { lookup } from '../../lookups.ts';

const options = z.object({
  keepInbox: z.boolean().describe('Old inbox mail lands in Inbox with unread state; false files it under Archive.'),
  includeSpam: z.boolean().describe('Mail labelled Spam is imported (into spam); else skipped.'),
  includeTrash: z.boolean().describe('Mail labelled Trash is imported (into trash); else skipped.'),
});

export const mailboxImportView = z.object({
  object: z.literal('mailbox_import'),
  id: z.string(),
  addressId: z.string().nullable(),
  address: z.string(),
  status: z.enum(['uploading', 'queued', 'running', 'completed', 'failed', 'cancelled']),
  options,
  files: z.array(
    z.object({
      name: z.string(),
      bytes: z.number().int(),
      chunks: z.number().int().describe('Parts to upload, numbered from 0: each `chunkBytes`, the last what is left.'),
    }),
  ),
  formats: z
    .array(z.enum(MAILBOX_IMPORT_FORMATS))
    .describe(
      'What each file was found to be, read from its bytes; set at start. A `zip` or `tgz` holds mbox and .eml files, in folders and one archive deep.',
    ),
  chunkBytes: z.number().int(),
  totalBytes: z.number().int(),
  processedBytes: z.number().int(),
  counts: z.object({
    imported: z.number().int().describe("Filed in threads, or made drafts (a takeout's Draft label)."),
    duplicate: z
      .number()
      .int()
      .describe('In the mailbox already (the same Message-ID and bytes, or the Message-ID in its thread).'),
    skipped: z
      .number()
      .int()
      .describe('Left out by the options (spam, trash), chats, and discarded drafts (Draft with Trash or Spam).'),
    notImported: z.number().int().describe("Unreadable, empty, larger than 64 MiB, or a draft past a draft's limits."),
  }),
  labelsCreated: z.number().int(),
  labelsSkipped: z
    .number()
    .int()
    .describe('Label names not made: past the label limit of the mailbox, or a name no label may have.'),
  lastError: z
    .string()
    .nullable()
    .describe('Why it failed (`failed`), or why the service cancelled it (`cancelled`: its upload expired).'),
  uploadDeleted: z.boolean(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function viewMailboxImport(row: MailboxImportRow): z.infer<typeof mailboxImportView> {
  const progress = row.progress;
  return {
    object: 'mailbox_import',
    id: row.id,
    addressId: row.address_id,
    address: row.address,
    status: row.status,
    options: row.options,
    files: row.files,
    formats: row.formats as MailboxImportFormat[],
    chunkBytes: Number(row.chunk_bytes),
    totalBytes: Number(row.total_bytes),
    processedBytes: progress.processedBytes,
    counts: progress.counts,
    labelsCreated: progress.labelsCreated,
    labelsSkipped: progress.labelsSkipped,
    lastError: row.last_error,
    uploadDeleted: row.upload_deleted,
    createdAt: row.created_at.toISOString(),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
  };
}

export const mailboxImportOr404 = lookup(findMailboxImport, {
  code: 'resource_not_found',
  message: 'No such import.',
  param: 'id',
  pattern: idPatterns.mailboxImport,
});
