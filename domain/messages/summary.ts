import { z } from 'zod';

/**
 * What an event says about a message: its headers, addresses, subject, a snippet and its
 * attachment list, never the body (architecture decision 12). The raw message and each
 * attachment live in the blob store under the SHA-256 given here. Made by
 * infra/inbound/summary.ts (mailparser).
 */

export const MailAddress = z.object({ name: z.string().nullable(), address: z.string() });
export type MailAddress = z.infer<typeof MailAddress>;

export const AttachmentSummary = z.object({
  filename: z.string().nullable(),
  contentType: z.string(),
  /** Decoded bytes. */
  size: z.number().int(),
  sha256: z.string(),
  contentId: z.string().nullable(),
  /** Shown in the body (referenced by `cid:` or marked inline) rather than offered as a file. */
  inline: z.boolean(),
});
export type AttachmentSummary = z.infer<typeof AttachmentSummary>;

export const MessageSummary = z.object({
  /** Message-ID without angle brackets; null when the message has none. */
  messageId: z.string().nullable(),
  inReplyTo: z.array(z.string()),
  references: z.array(z.string()),
  /** The Date header as an ISO instant; null when absent or unreadable. */
  date: z.string().nullable(),
  subject: z.string(),
  from: MailAddress.nullable(),
  replyTo: z.array(MailAddress),
  to: z.array(MailAddress),
  cc: z.array(MailAddress),
  /** Present in our own copies of sent mail only: arriving mail does not show them. */
  bcc: z.array(MailAddress),
  /** Header fields in order, decoded, within the bounds below (`headersTruncated` when cut). */
  headers: z.array(z.object({ name: z.string(), value: z.string() })),
  headersTruncated: z.boolean(),
  snippet: z.string(),
  attachments: z.array(AttachmentSummary),
  /** Bytes of the raw message as stored. */
  size: z.number().int(),
});
export type MessageSummary = z.infer<typeof MessageSummary>;

/** Everyone a message names: From, To, Cc and Bcc. */
export const peopleOf = (s: MessageSummary) => [s.from, ...s.to, ...s.cc, ...s.bcc];

/** A thread's participants as a message adds them: each address it names, lower case, once. */
export const participantsOf = (s: MessageSummary) => [
  ...new Set(
    peopleOf(s)
      .filter((p) => p !== null)
      .map((p) => p.address.toLowerCase()),
  ),
];

export const SUMMARY_LIMITS = {
  snippetChars: 200,
  headerFields: 100,
  headerValueChars: 998,
  headerBytes: 16 * 1024,
};

/**
 * Header fields left out of the summary: signatures and seals are long base64 that says nothing
 * to a reader or a rule, and the Authentication-Results we compute are kept apart.
 */
export const SUMMARY_SKIPPED_HEADERS = new Set([
  'dkim-signature',
  'x-google-dkim-signature',
  'arc-seal',
  'arc-message-signature',
  'arc-authentication-results',
]);

/**
 * Message ids out of a Message-ID, In-Reply-To or References value: the `<...>` tokens in
 * order, brackets removed, duplicates dropped; a value without brackets is read as one id (some
 * mailers leave them out). Comments and phrases around the ids (obsolete syntax) are ignored.
 */
export function messageIds(value: string | string[] | null | undefined): string[] {
  const text = Array.isArray(value) ? value.join(' ') : (value ?? '');
  const found = [...text.matchAll(/<([^<>\s]+)>/g)].map((m) => m[1]!);
  if (found.length === 0) {
    const bare = text.trim();
    if (bare && !/\s/.test(bare)) found.push(bare);
  }
  return [...new Set(found)];
}

/**
 * The first `max` characters (code points, never half of one) of a text. Only its head is split
 * into characters: `max` characters take at most twice as many UTF-16 units.
 */
export function firstChars(text: string, max: number): string {
  return text.length <= max
    ? text
    : Array.from(text.slice(0, 2 * max))
        .slice(0, max)
        .join('');
}

/** UTF-16 units of a text's head per snippet character that it is read from (spaces collapse). */
const HEAD_UNITS = 4;

const flatten = (text: string) => text.replace(/\s+/g, ' ').trim();
const shortened = (chars: string[], max: number) =>
  `${chars
    .slice(0, max - 1)
    .join('')
    .trimEnd()}…`;

/** The first `max` characters of the text with runs of white space made one space. */
export function snippetOf(text: string, max = SUMMARY_LIMITS.snippetChars): string {
  // Read off the head of the text when the head alone flattens to more than the snippet: a cut
  // text flattens as the whole does except at the cut (a white-space run or a surrogate pair cut),
  // which lies past the characters kept.
  if (text.length > HEAD_UNITS * max) {
    const head = Array.from(flatten(text.slice(0, HEAD_UNITS * max)));
    if (head.length > max) return shortened(head, max);
  }
  const flat = flatten(text);
  const chars = Array.from(flat);
  return chars.length <= max ? flat : shortened(chars, max);
}

const utf8 = new TextEncoder();

/** Header fields kept for the summary: skipped ones left out, each value and the whole bounded. */
export function boundedHeaders(fields: { name: string; value: string }[]): {
  headers: { name: string; value: string }[];
  truncated: boolean;
} {
  const headers: { name: string; value: string }[] = [];
  let bytes = 0;
  let truncated = false;
  for (const field of fields) {
    if (SUMMARY_SKIPPED_HEADERS.has(field.name.toLowerCase())) continue;
    const value = firstChars(field.value, SUMMARY_LIMITS.headerValueChars);
    const size = utf8.encode(field.name).length + utf8.encode(value).length;
    if (headers.length >= SUMMARY_LIMITS.headerFields || bytes + size > SUMMARY_LIMITS.headerBytes) {
      truncated = true;
      break;
    }
    if (value.length < field.value.length) truncated = true;
    headers.push({ name: field.name, value });
    bytes += size;
  }
  return { headers, truncated };
}
