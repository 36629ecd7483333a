import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Splitter } from '@zone-eu/mailsplit';
import libmime from 'libmime';
import addressparser from 'nodemailer/lib/addressparser';
import { messageIds } from '../../domain/messages/summary.ts';
import {
  type DeliveryReport,
  type FeedbackReport,
  type OriginalMessage,
  parseDeliveryStatus,
  parseFeedbackReport,
} from '../../domain/messages/reports.ts';

const STATUS_PARTS = new Set(['message/delivery-status', 'message/global-delivery-status']);
const FEEDBACK_PART = 'message/feedback-report';
/** Parts that return the original: its headers, or the whole message whose headers we take. */
const ORIGINAL_PARTS = new Set(['text/rfc822-headers', 'message/global-headers', 'message/rfc822', 'message/global']);
/** Only the start of a returned original is read: its headers, not its body or attachments. */
const PART_BYTES = 256 * 1024;

type Node = {
  contentType: string | false;
  parentNode: Node | false;
  root: boolean;
  headers: { getFirst(key: string): string } | false;
  getDecoder(): NodeJS.ReadWriteStream | null;
};

/**
 * Reads a DSN or an ARF report out of a message, or answers null when the message is neither: a
 * `multipart/report` whose machine-readable part (`message/delivery-status`,
 * `message/global-delivery-status` or `message/feedback-report`) is a child of it. The message
 * is split with mailsplit, embedded messages left whole, so the returned original is read as
 * sent (mailparser would fold an inline `message/rfc822` into the body text).
 */
export async function readReport(raw: Buffer | Readable): Promise<DeliveryReport | FeedbackReport | null> {
  const splitter = new Splitter({ ignoreEmbedded: true });
  const parts = new Map<
    Node,
    { type: string; chunks: Buffer[]; bytes: number; decoder: NodeJS.ReadWriteStream | null }
  >();
  let reportType: string | null = null;
  const sink = new Writable({
    objectMode: true,
    write(data: { type: string; node?: Node; value?: Buffer } & Node, _encoding, done) {
      if (data.type === 'node') {
        const node = data as Node;
        if (node.root && node.contentType === 'multipart/report' && node.headers) {
          const parsed = libmime.parseHeaderValue(node.headers.getFirst('content-type'));
          reportType = (parsed.params['report-type'] ?? '').toLowerCase();
        }
        const type = node.contentType || '';
        const parent = node.parentNode;
        const wanted = STATUS_PARTS.has(type) || type === FEEDBACK_PART || ORIGINAL_PARTS.has(type);
        // biome-ignore lint/complexity/useOptionalChain: parentNode is `false` at the root, which `?.` does not narrow away.
        if (wanted && parent && parent.root && parent.contentType === 'multipart/report')
          parts.set(node, { type, chunks: [], bytes: 0, decoder: node.getDecoder() });
      } else if (data.type === 'body' && data.node && data.value) {
        const part = parts.get(data.node);
        if (part && part.bytes < PART_BYTES) {
          part.chunks.push(data.value);
          part.bytes += data.value.length;
        }
      }
      done();
    },
  });
  await pipeline(Buffer.isBuffer(raw) ? Readable.from([raw]) : raw, splitter, sink);
  if (reportType === null) return null;

  const decoded = new Map<string, string>();
  for (const part of parts.values()) {
    if (decoded.has(part.type)) continue;
    decoded.set(part.type, (await decode(Buffer.concat(part.chunks), part.decoder)).toString('utf8'));
  }
  const original = originalOf([...ORIGINAL_PARTS].map((type) => decoded.get(type)).find((text) => text !== undefined));
  const status = decoded.get('message/delivery-status') ?? decoded.get('message/global-delivery-status');
  if (status !== undefined) return parseDeliveryStatus(status, original);
  const feedback = decoded.get(FEEDBACK_PART);
  if (feedback !== undefined) return parseFeedbackReport(feedback, original);
  return null;
}

/** A part's body through its transfer decoder (base64, quoted-printable); as is without one. */
async function decode(bytes: Buffer, decoder: NodeJS.ReadWriteStream | null): Promise<Buffer> {
  if (!decoder) return bytes;
  const out: Buffer[] = [];
  await pipeline(Readable.from([bytes]), decoder, async (source: AsyncIterable<string | Buffer>) => {
    for await (const chunk of source) out.push(Buffer.from(chunk));
  });
  return Buffer.concat(out);
}

/** The returned original's header block (up to its first blank line), read for what matching needs. */
function originalOf(text: string | undefined): OriginalMessage {
  if (text === undefined) return { messageId: null, from: null, to: [], subject: null };
  const head = text.split(/\r?\n\r?\n/, 1)[0] ?? '';
  const fields = new Map<string, string>();
  for (const field of head.replace(/\r?\n(?=[ \t])/g, '').split(/\r?\n/)) {
    const colon = field.indexOf(':');
    if (colon <= 0) continue;
    const name = field.slice(0, colon).trim().toLowerCase();
    if (!fields.has(name)) fields.set(name, field.slice(colon + 1).trim());
  }
  const addresses = (value: string | undefined) =>
    addressparser(value ?? '', { flatten: true })
      .map((entry) => entry.address)
      .filter((address): address is string => Boolean(address));
  const subject = fields.get('subject');
  return {
    messageId: messageIds(fields.get('message-id'))[0] ?? null,
    from: addresses(fields.get('from'))[0] ?? null,
    to: addresses(fields.get('to')),
    subject: subject === undefined ? null : libmime.decodeWords(subject),
  };
}
