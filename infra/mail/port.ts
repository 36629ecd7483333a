/**
 * The outbound mail port: operational mail the service itself sends (e.g. "your webhook endpoint
 * was disabled" to a workspace's owner and members). Two adapters implement it: SMTP
 * (`SMTP_URL`, infra/mail/smtp.ts) and a file outbox of `.eml` files for the embedded default
 * (infra/mail/file-outbox.ts); infra/mail/select.ts picks one.
 *
 * This module is library-free: the adapters map a checked message onto nodemailer.
 */

export interface OutboundMessage {
  /** One address, optionally with a display name: `Workspace Mail <noreply@example.com>`. */
  from: string;
  /** At least one; one address per element. */
  to: string[];
  /** One line: line breaks are folded into a space (they could only ever start a new header). */
  subject: string;
  text: string;
  html?: string;
  /**
   * Extra headers such as `Auto-Submitted` or `List-Unsubscribe`. Names are RFC 5322 field
   * names; the headers the message fields above set (From, To, Cc, Bcc, Subject, ...) and the
   * MIME structure headers are refused here, and so is a value with a line break.
   */
  headers?: Record<string, string>;
}

export interface MailSender {
  /**
   * Resolves once the message is handed over (accepted by the SMTP server, or its file is in the
   * outbox) with its Message-ID header value, angle brackets included. An SMTP server that
   * accepts some recipients and rejects others counts as sent: a retry would duplicate the mail
   * to the accepted ones. A message that breaks the rules above is refused with a TypeError
   * before anything is sent.
   */
  send(message: OutboundMessage): Promise<{ messageId: string }>;
  /** Waits for sends under way, then releases connections; a send after close is refused. */
  close(): Promise<void>;
}

/** RFC 5322 field name: printable US-ASCII except colon. */
const FIELD_NAME = /^[\x21-\x39\x3b-\x7e]+$/;
/** Headers a caller may not set through `headers`: the fields above and the MIME structure own them. */
const RESERVED_HEADERS = new Set([
  'from',
  'sender',
  'to',
  'cc',
  'bcc',
  'subject',
  'date',
  'message-id',
  'return-path',
  'mime-version',
  'content-type',
  'content-transfer-encoding',
  'content-disposition',
]);
const LINE_BREAK_OR_NUL = /[\r\n\0]/;

/**
 * The message as the adapters hand it to nodemailer, after the port's rules: throws a TypeError
 * for a message that breaks them. The field names match nodemailer's mail options.
 */
export function checkedMessage(message: OutboundMessage): {
  from: string;
  to: string[];
  subject: string;
  text: string;
  html?: string;
  headers?: Record<string, string>;
} {
  const { from, to, subject, text, html, headers } = message;
  if (typeof from !== 'string' || from.trim() === '' || LINE_BREAK_OR_NUL.test(from)) {
    throw new TypeError('mail: from must be one address on one line');
  }
  if (!Array.isArray(to) || to.length === 0) throw new TypeError('mail: to needs at least one address');
  for (const address of to) {
    if (typeof address !== 'string' || address.trim() === '' || LINE_BREAK_OR_NUL.test(address)) {
      throw new TypeError('mail: each to element must be one address on one line');
    }
  }
  if (typeof subject !== 'string') throw new TypeError('mail: subject must be a string');
  if (typeof text !== 'string') throw new TypeError('mail: text must be a string');
  if (html !== undefined && typeof html !== 'string') throw new TypeError('mail: html must be a string');
  const checked: ReturnType<typeof checkedMessage> = {
    from,
    to: [...to],
    // Other C0 controls (tab aside) go too: they have no place in a subject line.
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the controls are what is removed
    subject: subject.replace(/[\r\n]+/g, ' ').replace(/[\0-\x08\x0b-\x1f\x7f]/g, ''),
    text,
  };
  if (html !== undefined) checked.html = html;
  if (headers !== undefined) {
    const copy: Record<string, string> = {};
    for (const [name, value] of Object.entries(headers)) {
      if (!FIELD_NAME.test(name)) throw new TypeError(`mail: ${JSON.stringify(name)} is not a header field name`);
      if (RESERVED_HEADERS.has(name.toLowerCase())) {
        throw new TypeError(`mail: the ${name} header is set by the message fields, not by headers`);
      }
      if (typeof value !== 'string' || LINE_BREAK_OR_NUL.test(value)) {
        throw new TypeError(`mail: the ${name} header value must be one line`);
      }
      copy[name] = value;
    }
    checked.headers = copy;
  }
  return checked;
}
