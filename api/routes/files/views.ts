import { z } from 'zod';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findFile, type FileRow } from '../../../projections/files/queries.ts';
import { lookup } from '../../lookups.ts';

export const fileView = z.object({
  object: z.literal('file'),
  id: z.string(),
  source: z.enum(['attachment', 'upload']).describe('An attachment of received mail, or an upload.'),
  address: z
    .string()
    .nullable()
    .describe('The mailbox it belongs to (an address, or `*@<domain>`); null for an upload of the whole workspace.'),
  threadId: z.string().nullable().describe('An attachment: the thread of its message.'),
  messageId: z.string().nullable().describe('An attachment: the message (`mes_`) it came in.'),
  filename: z.string().nullable().describe('As the sender named it; null when the part had no name.'),
  contentType: z.string(),
  size: z.number().int().describe('Bytes, decoded.'),
  contentId: z.string().nullable(),
  inline: z.boolean().describe('Shown in the body of its message (`cid:`) rather than offered as a file.'),
  createdAt: z.string().describe('When the message arrived, or the file was uploaded.'),
});

export function viewFile(row: FileRow): z.infer<typeof fileView> {
  return {
    object: 'file',
    id: row.id,
    source: row.source,
    address: row.address,
    threadId: row.thread_id,
    messageId: row.message_id,
    filename: row.filename,
    contentType: row.content_type,
    size: row.size,
    contentId: row.content_id,
    inline: row.inline,
    createdAt: row.created_at.toISOString(),
  };
}

export const fileOr404 = lookup(findFile, {
  code: 'resource_not_found',
  message: 'No such file.',
  param: 'id',
  pattern: idPatterns.file,
});

/**
 * `attachment` always, so a browser never shows the file in our origin (an HTML or SVG file would
 * run there), with the name twice (RFC 6266): an ASCII fallback in which anything outside printable
 * ASCII, quotes, backslashes and `%` are `_`, and the whole name as UTF-8 in `filename*` (RFC 8187).
 * A sender's name with line breaks or quotes can therefore neither end the header nor the value.
 */
export function contentDisposition(filename: string): string {
  const fallback = filename.replace(/[^\x20-\x7e]|["\\%]/g, '_');
  const encoded = encodeURIComponent(filename).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}
