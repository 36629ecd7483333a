/**
 * Custom headers a sender may put on a message. The message's own fields (addresses, subject,
 * threading), what the pipeline sets (Message-ID, Date, DKIM-Signature, List-Unsubscribe, the
 * MIME structure) and what only MTAs add on the way (trace and authentication results) are
 * reserved: a caller setting one would contradict the field, break the signature or forge a
 * receiving server's verdict. The API answers such a header with 422 `reserved_header`.
 */

const RESERVED = new Set([
  'from',
  'sender',
  'reply-to',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'in-reply-to',
  'references',
  'mime-version',
  'list-unsubscribe',
  'list-unsubscribe-post',
  'dkim-signature',
  'domainkey-signature',
  'authentication-results',
  'received',
  'received-spf',
  'return-path',
  'delivered-to',
]);

/** Families reserved whole: the MIME part headers, resent blocks (RFC 5322 3.6.6) and ARC sets (RFC 8617). */
const RESERVED_PREFIXES = ['content-', 'resent-', 'arc-'];

/** RFC 5322 field name: printable US-ASCII except colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
const LINE_BREAK_OR_NUL = /[\r\n\0]/;

export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED.has(lower) || RESERVED_PREFIXES.some((prefix) => lower.startsWith(prefix));
}

export type HeaderProblem =
  | { reason: 'reserved_header'; name: string }
  /** Not an RFC 5322 field name. */
  | { reason: 'invalid_name'; name: string }
  /** A value must stay on its one line: a line break would start a header of the caller's choosing. */
  | { reason: 'invalid_value'; name: string };

/** The first problem with a set of custom headers, in their order; null when they may all be sent. */
export function checkCustomHeaders(headers: Readonly<Record<string, string>>): HeaderProblem | null {
  for (const [name, value] of Object.entries(headers)) {
    if (!FIELD_NAME.test(name)) return { reason: 'invalid_name', name };
    if (isReservedHeader(name)) return { reason: 'reserved_header', name };
    if (LINE_BREAK_OR_NUL.test(value)) return { reason: 'invalid_value', name };
  }
  return null;
}
