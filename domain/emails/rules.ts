/**
 * The rules of a send's input that need nothing but the input: addresses, recipient counts, tags,
 * sizes. Pure; the command (commands/emails/handlers.ts) applies them in the order a caller reads
 * the refusals: recipients, then content.
 */
import { domainToASCII } from 'node:url';
import { fail } from '../shared/errors.ts';

/** to + cc + bcc together, after removing repeats (as the common providers allow: Resend, Postmark). */
export const RECIPIENTS_MAX = 50;
/** `POST /emails/batch`: the spec's 100 messages. */
export const BATCH_MAX = 100;
export const SUBJECT_MAX = 998;
/** Text and html each, in characters: the templates' html limit. */
export const BODY_MAX = 1_000_000;
export const ATTACHMENTS_MAX = 20;
/** Decoded bytes of all attachments of one message, below the 25 MB many receivers take (base64 grows it by a third). */
export const ATTACHMENTS_BYTES_MAX = 10 * 1024 * 1024;
export const TAGS_MAX = 10;
export const HEADERS_MAX = 50;
export const HEADER_VALUE_MAX = 998;
/** How far ahead a send may be scheduled. */
export const SCHEDULE_AHEAD_MAX_MS = 30 * 24 * 60 * 60 * 1000;

/** RFC 5321 sizes: 64 for the local part, 254 for the whole path; the domain needs a dot. */
const ADDRESS =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~.-]{1,64}@(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/;
const NAMED = /^\s*(?:"((?:[^"\\\r\n]|\\.)*)"|([^"<>\r\n]*?))\s*<([^<>\s]+)>\s*$/;

export interface Mailbox {
  /** Lower-cased domain; the local part as given. */
  email: string;
  name: string | null;
}

/** `a@example.com` or `Name <a@example.com>`; null when it is neither. */
export function parseMailbox(input: string): Mailbox | null {
  const named = NAMED.exec(input);
  const name = named ? (named[1] ?? named[2] ?? '').replace(/\\(.)/g, '$1').trim() : null;
  const address = asciiDomain(named ? named[3]! : input.trim());
  if (address === null || address.length > 254 || !ADDRESS.test(address) || address.includes('..')) return null;
  const at = address.lastIndexOf('@');
  return { email: `${address.slice(0, at)}@${address.slice(at + 1).toLowerCase()}`, name: name || null };
}

/**
 * The address with an IDN domain in punycode (UTS 46, as the domains slice stores names): SMTP
 * without SMTPUTF8 carries only ASCII, and the sending address must match its stored row. Null
 * when the non-ASCII part is not a domain. A non-ASCII local part stays and is refused by ADDRESS.
 */
function asciiDomain(address: string): string | null {
  const at = address.lastIndexOf('@');
  const domain = address.slice(at + 1);
  if (at < 0 || !/\P{ASCII}/u.test(domain)) return address;
  // domainToASCII parses a URL host: it would cut at a slash and decode `%41`; ADDRESS's characters only.
  if (/[^\p{L}\p{M}\p{N}.-]/u.test(domain)) return null;
  const ascii = domainToASCII(domain);
  return ascii === '' ? null : `${address.slice(0, at)}@${ascii}`;
}

/** Parses each, refusing the first that is not an address with 422 `invalid_email_address` on `<param>.<index>`. */
export function parseMailboxes(inputs: readonly string[], param: string): Mailbox[] {
  return inputs.map((input, i) => {
    const box = parseMailbox(input);
    if (!box) fail('invalid_email_address', `${JSON.stringify(input)} is not an email address.`, `${param}.${i}`);
    return box;
  });
}

export interface RecipientLists {
  to: Mailbox[];
  cc: Mailbox[];
  bcc: Mailbox[];
}

/**
 * Drops repeats across the lists (ignoring case; the first list an address is in keeps it: to,
 * then cc, then bcc), then counts: past `RECIPIENTS_MAX` is 422 `too_many_recipients`, none is
 * 422 `invalid_parameter` on `to`.
 */
export function checkRecipients(lists: RecipientLists): RecipientLists {
  const seen = new Set<string>();
  const keep = (boxes: Mailbox[]) =>
    boxes.filter((b) => {
      const key = b.email.toLowerCase();
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
  const out = { to: keep(lists.to), cc: keep(lists.cc), bcc: keep(lists.bcc) };
  if (seen.size === 0) fail('invalid_parameter', 'A message needs at least one recipient.', 'to');
  checkRecipientCount(seen.size);
  return out;
}

/** At most RECIPIENTS_MAX different addresses over to, cc and bcc (a draft may still have none). */
export function checkRecipientCount(count: number): void {
  if (count > RECIPIENTS_MAX)
    fail(
      'too_many_recipients',
      `At most ${RECIPIENTS_MAX} recipients (to, cc and bcc together); this has ${count}.`,
      'to',
    );
}

/** A scheduled time as the event keeps it: null for at once (also for a time already past), else ISO. */
export function checkScheduledAt(input: string | undefined, now: string): string | null {
  if (input === undefined) return null;
  const at = Date.parse(input);
  if (!Number.isFinite(at) || !/(Z|[+-]\d{2}:?\d{2})$/i.test(input))
    fail('invalid_parameter', 'An ISO 8601 instant with its zone.', 'scheduledAt');
  const ahead = at - Date.parse(now);
  if (ahead <= 0) return null;
  if (ahead > SCHEDULE_AHEAD_MAX_MS) fail('invalid_parameter', 'At most 30 days ahead.', 'scheduledAt');
  return new Date(at).toISOString();
}

/** A Message-ID as given (with or without angle brackets), without them; null when it is not one. */
export function parseMessageId(input: string): string | null {
  const bare = input.trim().replace(/^<(.*)>$/, '$1');
  return /^[^\s<>@]+@[^\s<>@]+$/.test(bare) ? bare : null;
}

/** The Message-ID `input` names, or the refusal naming `param`. */
export function checkMessageId(input: string, param: string): string {
  const id = parseMessageId(input);
  if (id === null) fail('invalid_parameter', 'A Message-ID: `<local@domain>`, brackets optional.', param);
  return id;
}
