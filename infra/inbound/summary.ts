import type { Readable, Transform } from 'node:stream';
import libmime from 'libmime';
import type { AddressObject, AttachmentStream, HeaderValue } from 'mailparser';
import {
  type AttachmentSummary,
  boundedHeaders,
  firstChars,
  type MailAddress,
  type MessageSummary,
  messageIds,
  snippetOf,
} from '../../domain/messages/summary.ts';
import type { BlobStore } from '../blobs/port.ts';

export interface ParsedMessage {
  summary: MessageSummary;
  /**
   * The plain text of the body (from the HTML when there is no text part), at most
   * `SEARCH_TEXT_CHARS`: for a search index, never for an event.
   */
  searchText: string;
  /**
   * The body as decoded (`html` null without an HTML part): what an imported draft is written
   * with (domain/mailbox-imports/drafts.ts); never for an event or an index.
   */
  body: { text: string; html: string | null };
}

export const SEARCH_TEXT_CHARS = 64 * 1024;

// Loaded at the first message, not at start: with its decoders it is a third of a second of
// every process's start, most of which (a test, the CLI) never parse mail. Kept once loaded: an
// import() per message costs a module resolution each time (under tsx, a round trip to its
// loader thread, 0.4 ms).
let mailparser: Promise<typeof import('mailparser')> | undefined;

/**
 * Parses a message with mailparser into its summary, storing each attachment in the blob store
 * as it is decoded (attachments are never held whole in memory). `size` is the raw message's.
 */
export async function parseMessage(blobs: BlobStore, raw: Buffer | Readable, size: number): Promise<ParsedMessage> {
  mailparser ??= import('mailparser');
  const { MailParser } = await mailparser;
  const parser = new MailParser({ skipImageLinks: true, skipTextLinks: true });
  let headerLines: { key: string; line: string }[] = [];
  let headers = new Map<string, HeaderValue>();
  let text = '';
  let html = '';
  const stored: Promise<AttachmentSummary>[] = [];
  parser.on('headerLines', (lines) => {
    headerLines = [...lines];
  });
  parser.on('headers', (map) => {
    headers = map;
  });
  parser.on('data', (data: AttachmentStream | { type: 'text'; text?: string; html?: string | false }) => {
    if (data.type === 'text') {
      text = data.text ?? '';
      html = typeof data.html === 'string' ? data.html : '';
      return;
    }
    const put = storeAttachment(blobs, data);
    // Awaited with the others once the parse ends; until then a failure must not count as unhandled.
    put.catch(() => {});
    stored.push(put);
  });
  await feed(raw, parser);
  const attachments = await Promise.all(stored);
  for (const attachment of attachments)
    if (attachment.contentId && html.includes(`cid:${attachment.contentId}`)) attachment.inline = true;

  const fields = headerLines.map(({ line }) => {
    const colon = line.indexOf(':');
    const value = line
      .slice(colon + 1)
      .replace(/\r?\n[ \t]+/g, ' ')
      .trim();
    return { name: line.slice(0, colon).trim(), value: decodeWords(value) };
  });
  const bounded = boundedHeaders(fields);
  const date = headers.get('date');
  return {
    summary: {
      messageId: messageIds(headers.get('message-id') as string | undefined)[0] ?? null,
      inReplyTo: messageIds(headers.get('in-reply-to') as string | undefined),
      references: messageIds(headers.get('references') as string | string[] | undefined),
      date: date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : null,
      subject: (headers.get('subject') as string | undefined) ?? '',
      from: addresses(headers.get('from'))[0] ?? null,
      replyTo: addresses(headers.get('reply-to')),
      to: addresses(headers.get('to')),
      cc: addresses(headers.get('cc')),
      bcc: addresses(headers.get('bcc')),
      headers: bounded.headers,
      headersTruncated: bounded.truncated,
      snippet: snippetOf(text),
      attachments,
      size,
    },
    searchText: firstChars(text, SEARCH_TEXT_CHARS),
    body: { text, html: html === '' ? null : html },
  };
}

/**
 * Writes the message into the parser and waits for the parser's end. Not `stream.pipeline`: its
 * AbortController and the DOMException it aborts with at the end cost more than the rest of the
 * plumbing of a small message.
 */
function feed(raw: Buffer | Readable, parser: Transform): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    // The parser's output is taken by its 'data' listener; 'end' comes once it is all out.
    parser.once('end', () => resolve());
    parser.once('error', (error) => {
      if (!Buffer.isBuffer(raw)) raw.destroy();
      reject(error);
    });
    if (Buffer.isBuffer(raw)) {
      parser.end(raw);
      return;
    }
    raw.once('error', (error) => {
      parser.destroy(error);
      reject(error);
    });
    raw.pipe(parser);
  });
}

async function storeAttachment(blobs: BlobStore, data: AttachmentStream): Promise<AttachmentSummary> {
  try {
    const ref = await blobs.put(data.content as Readable);
    return {
      filename: data.filename ?? null,
      contentType: data.contentType,
      size: ref.size,
      sha256: ref.sha256,
      contentId: data.contentId ? data.contentId.replace(/^<|>$/g, '') : null,
      inline: data.contentDisposition === 'inline' && Boolean(data.contentId),
    };
  } finally {
    // The parser waits for the release; a put that failed midway must not leave it waiting.
    (data.content as Readable).resume();
    data.release();
  }
}

/** Mailparser's address objects, groups flattened into their members. */
function addresses(value: HeaderValue | undefined): MailAddress[] {
  if (!value || typeof value !== 'object' || value instanceof Date) return [];
  const objects = (Array.isArray(value) ? value : [value]) as AddressObject[];
  const out: MailAddress[] = [];
  const visit = (entries: AddressObject['value']) => {
    for (const entry of entries) {
      if (entry.group) visit(entry.group);
      else if (entry.address) out.push({ name: entry.name || null, address: entry.address });
    }
  };
  for (const object of objects) if (object && Array.isArray(object.value)) visit(object.value);
  return out;
}

function decodeWords(value: string): string {
  try {
    return libmime.decodeWords(value);
  } catch {
    return value;
  }
}
