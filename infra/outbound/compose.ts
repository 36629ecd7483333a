import { randomUUID } from 'node:crypto';
import MailComposer from 'nodemailer/lib/mail-composer';
import { checkCustomHeaders } from '../../domain/sending/headers.ts';

export interface MailAddress {
  address: string;
  name?: string;
}

export interface MailAttachment {
  filename: string;
  content: Uint8Array;
  contentType: string;
  /** Set for an inline part the html refers to as `cid:<contentId>`; it then goes beside the html (multipart/related). */
  contentId?: string;
}

/** One message as the pipeline holds it; every header it gets comes from here. */
export interface OutgoingMessage {
  /** `<...@sending domain>`, from newMessageId; kept across retries so a receiver can drop a duplicate. */
  messageId: string;
  date: Date;
  from: MailAddress;
  to: MailAddress[];
  cc?: MailAddress[];
  /** Envelope only: never written into the headers. */
  bcc?: MailAddress[];
  replyTo?: MailAddress[];
  subject: string;
  text?: string;
  html?: string;
  attachments?: MailAttachment[];
  /** The caller's own headers; the reserved ones (domain/sending/headers.ts) are refused. */
  headers?: Record<string, string>;
  /** Message-ID of the message replied to. */
  inReplyTo?: string;
  references?: string[];
  /**
   * One-click unsubscribe (RFC 8058): `List-Unsubscribe` with the https URL (and a mailto, when
   * given) and `List-Unsubscribe-Post: List-Unsubscribe=One-Click`.
   */
  listUnsubscribe?: { url: string; mailto?: string };
}

export interface ComposedMessage {
  /** The RFC 5322 message, CRLF line ends, unsigned. */
  raw: Buffer;
  /** Every recipient address (to, cc, bcc), each once, as the envelope needs them. */
  recipients: string[];
}

/** A Message-ID on the sending domain: 122 random bits, unique without coordination (RFC 5322 3.6.4). */
export function newMessageId(domain: string): string {
  return `<${randomUUID()}@${domain}>`;
}

const ADDRESS_UNSAFE = /[\r\n\0<>]/;
const NAME_UNSAFE = /[\r\n\0]/;

/**
 * Builds the MIME message with nodemailer's MailComposer: multipart/alternative for text and
 * html, multipart/related for inline parts, multipart/mixed for attachments, encoded words for
 * non-ASCII headers, all chosen by nodemailer. Throws a TypeError for a message the API should
 * have refused (a reserved or broken custom header, a line break in an address, an unsubscribe
 * URL that is not https), so nothing malformed can be signed and sent.
 */
export async function composeMessage(message: OutgoingMessage): Promise<ComposedMessage> {
  const headerProblem = checkCustomHeaders(message.headers ?? {});
  if (headerProblem)
    throw new TypeError(`compose: header ${JSON.stringify(headerProblem.name)}: ${headerProblem.reason}`);
  const addresses = (list: MailAddress[] | undefined) => (list ?? []).map(checkedAddress);
  const to = addresses(message.to);
  const cc = addresses(message.cc);
  const bcc = addresses(message.bcc);
  if (to.length + cc.length + bcc.length === 0) throw new TypeError('compose: a message needs a recipient');

  const headers: Record<string, string | { prepared: true; value: string }> = { ...message.headers };
  if (message.listUnsubscribe) {
    // prepared: nodemailer writes the value as is (it is ASCII by construction), not as encoded words.
    headers['List-Unsubscribe'] = { prepared: true, value: listUnsubscribeValue(message.listUnsubscribe) };
    headers['List-Unsubscribe-Post'] = { prepared: true, value: 'List-Unsubscribe=One-Click' };
  }

  const composer = new MailComposer({
    messageId: message.messageId,
    date: message.date,
    from: checkedAddress(message.from),
    to,
    cc,
    bcc,
    replyTo: addresses(message.replyTo),
    subject: message.subject.replace(/[\r\n]+/g, ' '),
    ...(message.text !== undefined ? { text: message.text } : {}),
    ...(message.html !== undefined ? { html: message.html } : {}),
    attachments: (message.attachments ?? []).map((a) => ({
      filename: a.filename,
      content: Buffer.from(a.content.buffer, a.content.byteOffset, a.content.byteLength),
      contentType: a.contentType,
      ...(a.contentId !== undefined ? { cid: a.contentId } : {}),
    })),
    headers,
    ...(message.inReplyTo !== undefined ? { inReplyTo: message.inReplyTo } : {}),
    ...(message.references?.length ? { references: message.references } : {}),
    newline: 'windows',
    disableFileAccess: true,
    disableUrlAccess: true,
  });
  const raw = await composer.compile().build();
  const recipients = [...new Set([...to, ...cc, ...bcc].map((a) => a.address))];
  return { raw, recipients };
}

function checkedAddress(address: MailAddress): MailAddress {
  if (typeof address.address !== 'string' || address.address === '' || ADDRESS_UNSAFE.test(address.address)) {
    throw new TypeError(`compose: ${JSON.stringify(address.address)} is not one address`);
  }
  if (address.name !== undefined && NAME_UNSAFE.test(address.name))
    throw new TypeError('compose: a display name must be one line');
  return address.name ? { address: address.address, name: address.name } : { address: address.address };
}

function listUnsubscribeValue({ url, mailto }: { url: string; mailto?: string }): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError('compose: the unsubscribe URL is not a URL');
  }
  // RFC 8058 3.1: one-click needs an https URI; URL.href is percent-encoded ASCII.
  if (parsed.protocol !== 'https:') throw new TypeError('compose: the unsubscribe URL must be https');
  const values = [`<${parsed.href}>`];
  if (mailto !== undefined) {
    if (/\s/.test(mailto)) throw new TypeError('compose: the unsubscribe mailto must be one address without spaces');
    values.push(`<mailto:${checkedAddress({ address: mailto }).address}>`);
  }
  return values.join(', ');
}
