import type { AddressObject, ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream, type SMTPServerOptions, type SMTPServerSession } from 'smtp-server';
import {
  type SubmissionPorts,
  SubmissionRefused,
  type SubmittedAddress,
  type SubmittedAttachment,
  type SubmittedMessage,
} from './port.ts';
import { closeSmtp, listenSmtp, smtpPort } from '../net/smtp-server.ts';

export interface SubmissionListenerOptions<P> {
  /** `SUBMISSION_PORT`; 0 picks a free port (tests). */
  port: number;
  host: string;
  /** Our name (`MAIL_HOSTNAME`), in the greeting. */
  hostname: string;
  /** The largest message taken, advertised with SIZE; a larger one is refused 552 and not sent. */
  maxMessageBytes: number;
  /** Recipients of one message; past it RCPT is answered 452 (RFC 5321 4.5.3.1.10) and the client sends the rest apart. */
  maxRecipients: number;
  /** A certificate for STARTTLS; without one smtp-server's built-in self-signed one (development only). */
  tls?: { key: string | Buffer; cert: string | Buffer };
  socketTimeoutMs?: number;
  maxClients?: number;
  ports: SubmissionPorts<P>;
  /** Failures the client is told only "try again later" about. */
  onError?: (error: unknown, context: string) => void;
}

/** A principal kept on smtp-server's session once its login succeeded. */
type Session<P> = SMTPServerSession & { user?: P };

const refuse = (code: number, status: string, message: string) =>
  Object.assign(new Error(`${status} ${message}`), { responseCode: code });

const tryLater = () => refuse(451, '4.3.0', 'Local error in processing, try again later');

/**
 * Whether the client is on this machine: the one place a password may cross without TLS (a
 * webmail or a local relay on the same host, and development). Anywhere else AUTH needs STARTTLS.
 */
export const isLoopback = (address: string) =>
  /^(::ffff:)?127\./.test(address) || address === '::1' || address === '::ffff:127.0.0.1';

/**
 * The SMTP submission listener (smtp-server, RFC 6409): AUTH PLAIN or LOGIN with an address's
 * login and one of its app passwords, over STARTTLS (or from loopback); MAIL FROM must be the
 * logged-in address; each message is parsed (mailparser) and handed to `ports.submit`, whose
 * refusal is the answer to DATA. Enhanced status codes (RFC 3463) are written into each refusal
 * by us, so a refused sender reads 5.7.1 rather than smtp-server's default for 550 (5.1.1).
 */
export class SubmissionListener<P> {
  readonly #server: SMTPServer;
  readonly #options: SubmissionListenerOptions<P>;

  private constructor(options: SubmissionListenerOptions<P>) {
    this.#options = options;
    const settings: SMTPServerOptions = {
      name: options.hostname,
      banner: 'ESMTP submission',
      logger: false,
      size: options.maxMessageBytes,
      rejectOversized: true,
      authMethods: ['PLAIN', 'LOGIN'],
      // Decided per connection in onAuth (loopback or TLS); smtp-server's own switch is all or nothing.
      allowInsecureAuth: true,
      authOptional: false,
      maxRecipients: options.maxRecipients,
      socketTimeout: options.socketTimeoutMs ?? 5 * 60_000,
      maxClients: options.maxClients,
      disableReverseLookup: true,
      ...(options.tls ?? {}),
      onAuth: (auth, session, callback) => {
        this.#onAuth(auth.username ?? '', auth.password ?? '', session).then(
          (user) => callback(null, { user }),
          (error: Error) => callback(error),
        );
      },
      onMailFrom: (address, session, callback) => {
        const user = (session as Session<P>).user;
        const allowed = user === undefined ? null : options.ports.senderOf(user);
        if (allowed !== null && address.address.toLowerCase() === allowed) return callback();
        callback(refuse(550, '5.7.1', `Sender address rejected: this login may send only as <${allowed ?? 'nobody'}>`));
      },
      onData: (stream, session, callback) => {
        this.#onData(stream, session as Session<P>).then(
          (id) => callback(null, id === null ? undefined : `2.0.0 Ok: queued as ${id}`),
          (error: Error) => callback(error),
        );
      },
    };
    this.#server = new SMTPServer(settings);
    this.#server.on('error', (error) => this.#report(error, 'smtp session'));
  }

  static async start<P>(options: SubmissionListenerOptions<P>): Promise<SubmissionListener<P>> {
    const listener = new SubmissionListener(options);
    await listenSmtp(listener.#server, options.port, options.host);
    return listener;
  }

  get port(): number {
    return smtpPort(this.#server);
  }

  /** Stops taking connections; open sessions get smtp-server's close timeout to finish. */
  close(): Promise<void> {
    return closeSmtp(this.#server);
  }

  async #onAuth(login: string, password: string, session: SMTPServerSession): Promise<P> {
    if (!session.secure && !isLoopback(session.remoteAddress))
      throw refuse(538, '5.7.11', 'Encryption required for requested authentication mechanism: use STARTTLS first');
    let user: P | null;
    try {
      user = await this.#options.ports.authenticate(login, password);
    } catch (error) {
      this.#report(error, 'authentication');
      throw refuse(454, '4.7.0', 'Temporary authentication failure');
    }
    if (user === null) throw refuse(535, '5.7.8', 'Authentication credentials invalid');
    return user;
  }

  /** Answers the queue id, or null for a message refused for its size (smtp-server answers that 552 itself). */
  async #onData(stream: SMTPServerDataStream, session: Session<P>): Promise<string | null> {
    const chunks: Buffer[] = [];
    for await (const chunk of stream as AsyncIterable<Buffer>) if (!stream.sizeExceeded) chunks.push(chunk);
    if (stream.sizeExceeded) return null;
    let parsed: ParsedMail;
    try {
      // Loaded at the first message, as in infra/inbound/summary.ts.
      const { simpleParser } = await import('mailparser');
      parsed = await simpleParser(Buffer.concat(chunks), {
        // The html keeps its cid: references (the parts go along as inline attachments), and neither
        // body is invented from the other: the message goes out as the client wrote it.
        skipImageLinks: true,
        skipHtmlToText: true,
        skipTextToHtml: true,
        skipTextLinks: true,
      });
    } catch {
      throw refuse(554, '5.6.0', 'The message could not be parsed as MIME');
    }
    const envelope = session.envelope;
    const message: SubmittedMessage = {
      mailFrom: envelope.mailFrom ? envelope.mailFrom.address.toLowerCase() : '',
      rcptTo: envelope.rcptTo.map((r) => r.address.toLowerCase()),
      from: addresses(parsed.from)[0] ?? null,
      to: addresses(parsed.to),
      cc: addresses(parsed.cc),
      replyTo: addresses(parsed.replyTo),
      subject: parsed.subject ?? null,
      text: parsed.text ?? null,
      html: typeof parsed.html === 'string' ? parsed.html : null,
      attachments: parsed.attachments.map(
        (a): SubmittedAttachment => ({
          filename: a.filename ?? 'attachment',
          contentType: a.contentType,
          content: a.content,
          ...(a.contentId && a.related ? { contentId: a.contentId.replace(/^<|>$/g, '') } : {}),
        }),
      ),
      inReplyTo: parsed.inReplyTo ? parsed.inReplyTo.replace(/^<|>$/g, '') : null,
      references: (Array.isArray(parsed.references) ? parsed.references : parsed.references ? [parsed.references] : [])
        .flatMap((r) => r.split(/\s+/))
        .filter((r) => r !== '')
        .map((r) => r.replace(/^<|>$/g, '')),
    };
    try {
      return await this.#options.ports.submit(session.user as P, message);
    } catch (error) {
      if (error instanceof SubmissionRefused) throw refuse(error.code, error.status, error.message);
      this.#report(error, 'submitting a message');
      throw tryLater();
    }
  }

  #report(error: unknown, context: string): void {
    (this.#options.onError ?? ((e, c) => console.error(`submission smtp, ${c}:`, e)))(error, context);
  }
}

/** Every mailbox of a header, groups opened. */
function addresses(field: AddressObject | AddressObject[] | undefined): SubmittedAddress[] {
  const objects = field === undefined ? [] : Array.isArray(field) ? field : [field];
  return objects
    .flatMap((o) => o.value)
    .flatMap((v) => (v.group ? v.group : [v]))
    .filter((v) => v.address)
    .map((v) => ({ address: v.address!.toLowerCase(), name: v.name }));
}
