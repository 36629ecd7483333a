import { PassThrough, Readable } from 'node:stream';
import {
  SMTPServer,
  type SMTPServerAddress,
  type SMTPServerDataStream,
  type SMTPServerOptions,
  type SMTPServerSession,
} from 'smtp-server';
import type { BlobRef, BlobStore } from '../blobs/port.ts';
import type { InboundClient, InboundHandler, InboundMessage, RecipientPolicy } from './port.ts';
import { closeSmtp, listenSmtp, smtpPort } from '../net/smtp-server.ts';

export interface InboundListenerOptions<R> {
  /** `SMTP_PORT`; 0 picks a free port (tests). */
  port: number;
  host: string;
  /** Our name (`MAIL_HOSTNAME`): the greeting and the `by` of our Received line. */
  hostname: string;
  /** The largest message taken, advertised with SIZE and enforced while the bytes arrive. */
  maxMessageBytes: number;
  /** Recipients of one transaction; RFC 5321 4.5.3.1.8 asks for at least 100. */
  maxRecipients?: number;
  /** Messages up to this size are kept in memory for the handler besides being stored. */
  memoryBytes?: number;
  /** Silence after which a session is dropped; RFC 5321 4.5.3.2 suggests 5 minutes. */
  socketTimeoutMs?: number;
  maxClients?: number;
  /** A certificate for STARTTLS; without one smtp-server offers its built-in self-signed one. */
  tls?: { key: string | Buffer; cert: string | Buffer };
  blobs: BlobStore;
  policy: RecipientPolicy<R>;
  handler: InboundHandler<R>;
  /** Failures the client is told only "try again later" about. */
  onError?: (error: unknown, context: string) => void;
  now?: () => Date;
}

export const INBOUND_DEFAULTS = {
  maxRecipients: 100,
  memoryBytes: 1024 * 1024,
  socketTimeoutMs: 5 * 60_000,
};

/** The accepted recipient's value, kept on smtp-server's own address object for the transaction. */
const RESOLVED = Symbol('recipient');
type Resolved<R> = SMTPServerAddress & { [RESOLVED]?: R };

/** An SMTP reply as the error smtp-server turns into one. */
function reply(code: number, message: string): Error {
  return Object.assign(new Error(message), { responseCode: code });
}

const TRY_LATER = 'Local error in processing, try again later';

/**
 * The inbound SMTP listener (smtp-server): takes mail for the recipients the policy accepts,
 * refuses the others at RCPT, streams each message into the blob store as it arrives (behind a
 * Return-Path and a Received line of ours, RFC 5321 4.4) and hands the stored message to the
 * handler, whose verdict is the answer to DATA. A message over the size limit is refused 552
 * and nothing of it is stored; a failure of ours is answered 451 so the sender tries again.
 *
 * No AUTH (this is an MX, not a submission port) and no reverse lookup (smtp-server's would use
 * the system resolver, not our DNS port; nothing here needs the name).
 */
export class InboundListener<R> {
  readonly #server: SMTPServer;
  readonly #options: InboundListenerOptions<R> & typeof INBOUND_DEFAULTS;
  #transactions = 0;

  private constructor(options: InboundListenerOptions<R>) {
    this.#options = { ...INBOUND_DEFAULTS, ...options };
    const settings: SMTPServerOptions = {
      name: options.hostname,
      banner: 'ESMTP',
      logger: false,
      size: options.maxMessageBytes,
      rejectOversized: true,
      // Senders read 5.1.1 or 4.2.1 better than a bare 550 or 450 (RFC 3463); smtp-server hides
      // them unless asked. DSN stays hidden: as the final delivery we send no success notices.
      hideENHANCEDSTATUSCODES: false,
      maxRecipients: this.#options.maxRecipients,
      socketTimeout: this.#options.socketTimeoutMs,
      maxClients: options.maxClients,
      disabledCommands: ['AUTH'],
      authOptional: true,
      // A sender with many recipients or messages per session is not a brute-forcer here.
      maxAllowedUnauthenticatedCommands: false,
      disableReverseLookup: true,
      ...(options.tls ?? {}),
      onRcptTo: (address, session, callback) => {
        this.#onRcptTo(address, session).then(
          () => callback(),
          (error: Error) => callback(error),
        );
      },
      onData: (stream, session, callback) => {
        this.#onData(stream, session).then(
          () => callback(),
          (error: Error) => callback(error),
        );
      },
    };
    this.#server = new SMTPServer(settings);
    this.#server.on('error', (error) => this.#report(error, 'smtp session'));
  }

  static async start<R>(options: InboundListenerOptions<R>): Promise<InboundListener<R>> {
    const listener = new InboundListener(options);
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

  async #onRcptTo(address: Resolved<R>, session: SMTPServerSession): Promise<void> {
    let verdict: Awaited<ReturnType<RecipientPolicy<R>['accept']>>;
    try {
      verdict = await this.#options.policy.accept({
        address: address.address,
        mailFrom: mailFromOf(session),
        client: clientOf(session),
      });
    } catch (error) {
      this.#report(error, `recipient ${address.address}`);
      throw reply(451, TRY_LATER);
    }
    if (!verdict.accept) throw reply(verdict.code, verdict.message);
    address[RESOLVED] = verdict.recipient;
  }

  async #onData(stream: SMTPServerDataStream, session: SMTPServerSession): Promise<void> {
    const receivedAt = (this.#options.now ?? (() => new Date()))();
    const id = `${session.id}.${++this.#transactions}`;
    const recipients = (session.envelope.rcptTo as Resolved<R>[]).map((a) => ({
      address: a.address,
      recipient: a[RESOLVED] as R,
    }));
    const trace = Buffer.from(traceHeaders(session, id, this.#options.hostname, receivedAt), 'latin1');
    const stored = await this.#store(stream, trace);
    if (stored === 'too-large')
      throw reply(552, `Message exceeds fixed maximum message size ${this.#options.maxMessageBytes}`);
    if (stored instanceof Error) {
      this.#report(stored, `storing message ${id}`);
      throw reply(451, TRY_LATER);
    }
    const { blob, memory } = stored;
    const message: InboundMessage<R> = {
      id,
      receivedAt,
      client: clientOf(session),
      mailFrom: mailFromOf(session),
      recipients,
      blob,
      open: async () => {
        if (memory) return Readable.from([memory]);
        const streamed = await this.#options.blobs.stream(blob.sha256);
        if (!streamed) throw new Error(`inbound: the stored message ${blob.sha256} is gone`);
        return streamed;
      },
    };
    let verdict: Awaited<ReturnType<InboundHandler<R>['receive']>>;
    try {
      verdict = await this.#options.handler.receive(message);
    } catch (error) {
      this.#report(error, `handling message ${id}`);
      throw reply(451, TRY_LATER);
    }
    if (!verdict.accept) throw reply(verdict.code, verdict.message);
  }

  /**
   * Streams DATA into the blob store behind `trace`, keeping a copy in memory while it is small.
   * Always reads the client's stream to its end (smtp-server answers only then); past the size
   * limit the put is aborted so nothing is stored.
   */
  #store(
    stream: SMTPServerDataStream,
    trace: Buffer,
  ): Promise<{ blob: BlobRef; memory: Buffer | null } | 'too-large' | Error> {
    const { blobs, memoryBytes } = this.#options;
    return new Promise((resolve) => {
      const body = new PassThrough();
      let kept: Buffer[] | null = [trace];
      let keptBytes = trace.length;
      let failure: 'too-large' | Error | null = null;
      let ended = false;
      const put = blobs.put(body).then(
        (blob) => blob,
        (error: Error) => {
          failure ??= error;
          // Whatever waits for the body to drain waits no longer: the rest is read and dropped.
          stream.resume();
          return null;
        },
      );
      const settle = () => {
        void put.then((blob) => {
          if (failure || !blob) return resolve(failure ?? new Error('inbound: the blob store stored nothing'));
          const { created: _, ...ref } = blob;
          resolve({ blob: ref, memory: kept ? Buffer.concat(kept, keptBytes) : null });
        });
      };
      const abort = (reason: 'too-large' | Error) => {
        failure ??= reason;
        kept = null;
        body.destroy(reason === 'too-large' ? new Error('inbound: message too large') : reason);
      };
      body.write(trace);
      stream.on('data', (chunk: Buffer) => {
        if (failure) return;
        if (stream.sizeExceeded) return abort('too-large');
        if (kept) {
          keptBytes += chunk.length;
          if (keptBytes <= memoryBytes) kept.push(chunk);
          else kept = null;
        }
        if (!body.write(chunk)) {
          stream.pause();
          body.once('drain', () => stream.resume());
        }
      });
      stream.once('end', () => {
        ended = true;
        if (stream.sizeExceeded) abort('too-large');
        else if (!failure) body.end();
        settle();
      });
      stream.once('error', (error: Error) => {
        abort(error);
        if (!ended) settle();
      });
    });
  }

  #report(error: unknown, context: string): void {
    (this.#options.onError ?? ((e, c) => console.error(`inbound smtp, ${c}:`, e)))(error, context);
  }
}

function clientOf(session: SMTPServerSession): InboundClient {
  return {
    address: session.remoteAddress.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, ''),
    helo: session.hostNameAppearsAs || '',
    secure: session.secure,
  };
}

function mailFromOf(session: SMTPServerSession): string {
  const from = session.envelope.mailFrom;
  return from ? from.address : '';
}

/** A client's words put in a header: printable ASCII only, no way to start a line of its own. */
function printable(value: string, max = 255): string {
  return value.replace(/[^\x21-\x7e]/g, '?').slice(0, max);
}

/**
 * Return-Path (we are the final delivery, RFC 5321 4.4) and our Received line, folded as MTAs
 * fold it. The `for` clause names the recipient only when there is one: several would tell each
 * recipient who else got the message.
 */
function traceHeaders(session: SMTPServerSession, id: string, hostname: string, at: Date): string {
  const client = clientOf(session);
  const rcpts = session.envelope.rcptTo;
  const helo = client.helo ? printable(client.helo) : 'unknown';
  const protocol = session.transmissionType || 'ESMTP';
  const forClause = rcpts.length === 1 ? `\r\n\tfor <${printable(rcpts[0]!.address, 320)}>` : '';
  return (
    `Return-Path: <${printable(mailFromOf(session), 320)}>\r\n` +
    `Received: from ${helo} ([${client.address}])\r\n\tby ${hostname} with ${protocol} id ${id}${forClause};\r\n\t${rfc5322Date(at)}\r\n`
  );
}

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

function rfc5322Date(at: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${DAYS[at.getUTCDay()]}, ${at.getUTCDate()} ${MONTHS[at.getUTCMonth()]} ${at.getUTCFullYear()} ${pad(at.getUTCHours())}:${pad(at.getUTCMinutes())}:${pad(at.getUTCSeconds())} +0000`;
}
