import { isIP } from 'node:net';
import { createTransport } from 'nodemailer';
import { checkedMessage, type MailSender, type OutboundMessage } from './port.ts';

/**
 * A failed SMTP exchange, with every form of the credentials taken out of its text. nodemailer's
 * own error is not kept as `cause`: it may carry the connection options.
 */
export class MailSendError extends Error {
  override readonly name = 'MailSendError';
  /** nodemailer's code: EAUTH, ECONNECTION, ETIMEDOUT, EENVELOPE, EMESSAGE, ... */
  readonly code: string | undefined;
  /** The SMTP reply code when the server answered (535 for a refused login). */
  readonly responseCode: number | undefined;
  readonly command: string | undefined;

  constructor(message: string, details: { code?: string; responseCode?: number; command?: string }) {
    super(message);
    this.code = details.code;
    this.responseCode = details.responseCode;
    this.command = details.command;
  }
}

/** Query parameters of `SMTP_URL` dropped before nodemailer sees them: its logger prints the session. */
const DROPPED_PARAMETERS = ['logger', 'debug', 'transactionLog'];

/**
 * Sends through an SMTP server given as a URL: `smtp://user:pass@host:587` (STARTTLS) or
 * `smtps://user:pass@host:465` (TLS from the start); user and password percent-encoded.
 * Connections are pooled and reused between messages.
 *
 * Unless the URL says otherwise (`?requireTLS=false`), a plain `smtp://` server that is not on
 * loopback must offer STARTTLS, so a downgrade cannot expose the password. Other nodemailer
 * options can be given as query parameters (`?maxConnections=2&tls.servername=...`). The URL is
 * never logged or put in an error; `endpoint` is the form fit for a log line.
 */
export class SmtpSender implements MailSender {
  /** `smtp://host:port`, without the credentials. */
  readonly endpoint: string;
  readonly #smtp: SmtpUrlTransport;
  readonly #inFlight = new Set<Promise<unknown>>();
  #closed = false;

  constructor(smtpUrl: string) {
    this.#smtp = openSmtpUrl(smtpUrl, 'SMTP_URL');
    this.endpoint = this.#smtp.endpoint;
  }

  async send(message: OutboundMessage): Promise<{ messageId: string }> {
    if (this.#closed) throw new Error('mail: the SMTP sender is closed');
    const work = this.#smtp.transport.sendMail(checkedMessage(message));
    this.#inFlight.add(work);
    try {
      const info = await work;
      return { messageId: info.messageId };
    } catch (error) {
      throw this.#smtp.scrubbed(error);
    } finally {
      this.#inFlight.delete(work);
    }
  }

  /** Connects and logs in once, without sending: a start-up check of `SMTP_URL`. */
  async verify(): Promise<void> {
    try {
      await this.#smtp.transport.verify();
    } catch (error) {
      throw this.#smtp.scrubbed(error);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#inFlight]);
    this.#smtp.transport.close();
  }
}

export interface SmtpUrlTransport {
  /** `smtp://host:port`, without the credentials. */
  endpoint: string;
  /** A pooled nodemailer transport; never log its options. */
  transport: ReturnType<typeof createPooled>;
  /** nodemailer's error as a MailSendError with every form of the credentials taken out. */
  scrubbed(error: unknown): MailSendError;
}

/**
 * A pooled transport for an SMTP URL (the rules above SmtpSender), shared by the notices sender
 * and the outbound relay. `variable` names the setting in errors, which never quote the URL.
 */
export function openSmtpUrl(smtpUrl: string, variable: string): SmtpUrlTransport {
  let url: URL;
  try {
    url = new URL(smtpUrl);
  } catch {
    // Node's own error would quote the input, password and all.
    throw new TypeError(`${variable} is not a valid URL (smtp://user:pass@host:port or smtps://...)`);
  }
  if (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') {
    throw new TypeError(`${variable} must use smtp: or smtps:, not ${url.protocol}`);
  }
  if (url.hostname === '') throw new TypeError(`${variable} has no host`);
  for (const name of DROPPED_PARAMETERS) url.searchParams.delete(name);

  const endpoint = `${url.protocol}//${url.host}`;
  const secrets = secretForms(safeDecode(url.username), safeDecode(url.password), smtpUrl);
  return {
    endpoint,
    transport: createPooled(url.href, url.protocol === 'smtp:' && !isLoopback(url.hostname)),
    scrubbed(error: unknown): MailSendError {
      const source = (error ?? {}) as { message?: unknown; code?: unknown; responseCode?: unknown; command?: unknown };
      let text = typeof source.message === 'string' ? source.message : String(error);
      for (const secret of secrets) text = text.split(secret).join('[redacted]');
      return new MailSendError(`SMTP ${endpoint}: ${text}`, {
        ...(typeof source.code === 'string' ? { code: source.code } : {}),
        ...(typeof source.responseCode === 'number' ? { responseCode: source.responseCode } : {}),
        ...(typeof source.command === 'string' ? { command: source.command } : {}),
      });
    },
  };
}

function createPooled(url: string, requireTLS: boolean) {
  // Options in the object apply where the URL does not set them.
  return createTransport({
    url,
    pool: true,
    requireTLS,
    connectionTimeout: 10_000,
    greetingTimeout: 10_000,
    socketTimeout: 60_000,
    logger: false,
    debug: false,
    disableFileAccess: true,
    disableUrlAccess: true,
  });
}

function isLoopback(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

/** Every spelling of the password that could end up in a message: raw, URL-encoded, base64, AUTH PLAIN. */
function secretForms(user: string, password: string, url: string): string[] {
  if (password === '') return [url];
  const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');
  const forms = [
    url,
    base64(`\0${user}\0${password}`),
    base64(`${user}\0${user}\0${password}`),
    base64(password),
    encodeURIComponent(password),
    password,
  ];
  // Longest first, so a form that contains another is taken out whole.
  return [...new Set(forms)].sort((a, b) => b.length - a.length);
}
