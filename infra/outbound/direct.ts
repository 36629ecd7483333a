import { PassThrough } from 'node:stream';
import SMTPConnection from 'nodemailer/lib/smtp-connection';
import type { RecipientStatus } from '../../domain/sending/smtp-reply.ts';
import type { Dns } from '../dns/port.ts';
import { isBlockedAddress } from '../net/outbound-url.ts';
import {
  answered,
  checkedRecipients,
  noAnswerCode,
  fromTransaction,
  fromUs,
  InFlight,
  type Delivery,
  type DeliveryRequest,
  type Hop,
  type RecipientOutcome,
  type SmtpAnswer,
} from './delivery.ts';

export interface DirectDeliveryOptions {
  dns: Dns;
  /** The name we greet with (EHLO): the service's mail host name, which should be the sending address's PTR. */
  heloName: string;
  /** 25. Only tests point it elsewhere (`SMTP_MX_PORT`), at a server on loopback. */
  port?: number;
  /**
   * Lets MX hosts resolve to loopback, private and reserved addresses. Off, such an address is
   * skipped like one that does not answer: a recipient domain must not point our sessions into
   * our own network. Tests turn it on with the port override.
   */
  allowPrivateAddresses?: boolean;
  /** Sessions open at once to one MX host (a per-destination limit); more deliveries wait their turn. */
  maxConnectionsPerHost?: number;
  /** Addresses tried for one delivery, across MX hosts, before its recipients are deferred. */
  maxAddresses?: number;
  connectionTimeoutMs?: number;
  greetingTimeoutMs?: number;
  /** The longest silence within a session: a reply, or the acceptance of the message's end. */
  socketTimeoutMs?: number;
  /** An idle session is kept this long for the next message to the same host. */
  idleTimeoutMs?: number;
  /** A session is not reused once it is this old; servers limit session length and we stay well under. */
  maxSessionAgeMs?: number;
  /** Orders MX hosts of equal preference (RFC 5321 5.1); tests pin it. */
  random?: () => number;
}

export const DIRECT_DEFAULTS = {
  port: 25,
  maxConnectionsPerHost: 10,
  maxAddresses: 5,
  connectionTimeoutMs: 30_000,
  greetingTimeoutMs: 60_000,
  socketTimeoutMs: 300_000,
  idleTimeoutMs: 10_000,
  maxSessionAgeMs: 300_000,
} as const;

/** What one attempt left: outcomes for some recipients, the others for the next address. */
interface Attempt {
  settled: RecipientOutcome[];
  unsettled: string[];
  /** Why the unsettled ones were not served here: what they get if no other address serves them. */
  failure: Failure;
}

interface Failure {
  code: number | null;
  enhancedCode: string | null;
  response: string;
  hop: Hop;
}

type Route =
  | { kind: 'hosts'; hosts: string[]; implicit: boolean }
  | { kind: 'settled'; status: RecipientStatus; enhancedCode: string; response: string };

interface Session {
  connection: SMTPConnection;
  host: string;
  openedAt: number;
  /** Set once the connection errs or ends: it is never handed out again. */
  dead: boolean;
  idleTimer: NodeJS.Timeout | undefined;
}

type NodemailerError = Error & SmtpAnswer & { code?: string };

/**
 * Direct delivery: the recipient domain's MX hosts, looked up through the DNS port, tried by
 * preference (equal ones in random order), the domain itself when it has no MX (RFC 5321 5.1),
 * never anything when it publishes a null MX (RFC 7505). A host that cannot be reached, does not
 * greet, or fails before the transaction (TLS, EHLO) gives way to the next address; an answer to
 * the transaction is final for this attempt. STARTTLS is used whenever offered, without checking
 * the certificate (opportunistic TLS, RFC 7435, as MTAs do: most MX certificates would not
 * verify, and refusing them would only send the mail in plaintext instead).
 *
 * Sessions are kept per MX host and reused for the next message to it; at most
 * `maxConnectionsPerHost` are open to one host, and deliveries beyond wait in order. SMTP itself
 * is nodemailer's SMTPConnection.
 */
export class DirectDelivery implements Delivery {
  readonly #dns: Dns;
  readonly #options: Required<Omit<DirectDeliveryOptions, 'dns'>>;
  readonly #hosts = new Map<string, HostSessions>();
  readonly #inFlight = new InFlight();
  #closed = false;

  constructor(options: DirectDeliveryOptions) {
    this.#dns = options.dns;
    this.#options = {
      ...DIRECT_DEFAULTS,
      allowPrivateAddresses: false,
      random: Math.random,
      ...withoutUndefined(options),
    };
  }

  async deliver(request: DeliveryRequest): Promise<RecipientOutcome[]> {
    if (this.#closed) throw new Error('deliver: direct delivery is closed');
    const recipients = checkedRecipients(request.recipients);
    const domains = new Set(recipients.map((r) => r.slice(r.lastIndexOf('@') + 1).toLowerCase()));
    if (domains.size !== 1)
      throw new TypeError('deliver: direct delivery takes the recipients of one domain at a time');
    const [domain] = domains as unknown as [string];
    return this.#inFlight.track(this.#deliver(domain, recipients, request));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#inFlight.settled();
    for (const host of this.#hosts.values()) host.closeIdle();
    this.#hosts.clear();
  }

  async #deliver(domain: string, recipients: string[], request: DeliveryRequest): Promise<RecipientOutcome[]> {
    const route = await this.#route(domain);
    const none: Hop = { mx: null, tls: null };
    if (route.kind === 'settled')
      return recipients.map((r) => fromUs(r, route.status, route.enhancedCode, route.response, none));

    const outcomes = new Map<string, RecipientOutcome>();
    let pending = recipients;
    let failure: Failure | null = null;
    let lookupFailed = false;
    let tries = 0;
    hosts: for (const host of route.hosts) {
      const addresses = await this.#addresses(host);
      if (addresses.kind === 'failed') {
        lookupFailed = true;
        failure = {
          code: null,
          enhancedCode: '4.4.3',
          response: `address lookup for ${host} failed (${addresses.reason})`,
          hop: { mx: host, tls: null },
        };
        continue;
      }
      for (const address of addresses.list) {
        if (tries++ === this.#options.maxAddresses) break hosts;
        const attempt = await this.#attempt(host, address, pending, request);
        for (const outcome of attempt.settled) outcomes.set(outcome.recipient, outcome);
        pending = attempt.unsettled;
        if (pending.length === 0) break hosts;
        failure = attempt.failure;
      }
    }

    for (const recipient of pending) {
      if (failure) outcomes.set(recipient, { recipient, status: 'deferred', ...failure, ...failure.hop });
      else if (!lookupFailed) {
        // Every name answered and none gave a usable address: there is nowhere to deliver.
        const [enhancedCode, response] = route.implicit
          ? ['5.1.2', `${domain} has no MX record and no usable address`]
          : ['5.4.4', `no MX host of ${domain} has a usable address`];
        outcomes.set(recipient, fromUs(recipient, 'bounced', enhancedCode, response, none));
      }
    }
    return recipients.map((r) => outcomes.get(r)!);
  }

  async #route(domain: string): Promise<Route> {
    const answer = await this.#dns.mx(domain);
    if (answer.status === 'failed')
      return {
        kind: 'settled',
        status: 'deferred',
        enhancedCode: '4.4.3',
        response: `MX lookup for ${domain} failed (${answer.reason})`,
      };
    if (answer.status === 'missing') return { kind: 'hosts', hosts: [domain], implicit: true };
    // Node reports the root (".") of a null MX as an empty exchange.
    const usable = answer.records.filter((r) => r.exchange !== '' && r.exchange !== '.');
    if (usable.length === 0)
      return {
        kind: 'settled',
        status: 'bounced',
        enhancedCode: '5.1.10',
        response: `${domain} accepts no mail (null MX, RFC 7505)`,
      };
    const ranked = usable.map((r) => ({
      exchange: r.exchange.toLowerCase().replace(/\.$/, ''),
      priority: r.priority,
      tiebreak: this.#options.random(),
    }));
    ranked.sort((a, b) => a.priority - b.priority || a.tiebreak - b.tiebreak);
    return { kind: 'hosts', hosts: [...new Set(ranked.map((r) => r.exchange))], implicit: false };
  }

  async #addresses(host: string): Promise<{ kind: 'found'; list: string[] } | { kind: 'failed'; reason: string }> {
    const [a, aaaa] = await Promise.all([this.#dns.a(host), this.#dns.aaaa(host)]);
    const list = [...(a.status === 'found' ? a.records : []), ...(aaaa.status === 'found' ? aaaa.records : [])].filter(
      (address) => this.#options.allowPrivateAddresses || !isBlockedAddress(address),
    );
    const failed = [a, aaaa].find((answer) => answer.status === 'failed');
    // One family failing while the other answered is no reason to wait: use what answered.
    if (list.length === 0 && failed?.status === 'failed') return { kind: 'failed', reason: failed.reason };
    return { kind: 'found', list };
  }

  /** One try at one address of `host` (or an idle session to it) for `recipients`. */
  async #attempt(host: string, address: string, recipients: string[], request: DeliveryRequest): Promise<Attempt> {
    const sessions = this.#sessions(host);
    await sessions.acquire();
    try {
      let session = sessions.takeIdle();
      const reused = session !== undefined;
      if (!session) {
        const opened = await this.#open(host, address);
        if ('failure' in opened) return { settled: [], unsettled: recipients, failure: opened.failure };
        session = opened;
      }
      let sent = await transact(session, recipients, request);
      // A reused session the server closed while it sat idle fails before the message is read:
      // that says nothing about this message, so it goes once more on a fresh session.
      if (reused && !sent.dataSent && !answered(sent.error) && sent.error) {
        session.connection.close();
        const opened = await this.#open(host, address);
        if ('failure' in opened) return { settled: [], unsettled: recipients, failure: opened.failure };
        session = opened;
        sent = await transact(session, recipients, request);
      }
      return await this.#settle(sessions, session, recipients, sent);
    } finally {
      sessions.release();
    }
  }

  async #settle(sessions: HostSessions, session: Session, recipients: string[], sent: Transacted): Promise<Attempt> {
    const hop: Hop = { mx: session.host, tls: session.connection.secure };
    const { info, error, envelope, dataSent } = sent;
    const reply = answered(info ?? error);
    if (reply) {
      // A refusal at RCPT is kept in the envelope nodemailer fills in, also when DATA fails afterwards.
      const outcomes = fromTransaction(
        recipients,
        { ...reply, rejectedErrors: reply.rejectedErrors ?? envelope.rejectedErrors },
        hop,
      );
      // After a refused transaction the session is reset (RSET) before it serves another; 421 ends it.
      const reusable = !error || (reply.responseCode !== 421 && (await reset(session)));
      sessions.putBack(session, !reusable, this.#options);
      return {
        settled: outcomes,
        unsettled: [],
        failure: { code: reply.responseCode, enhancedCode: null, response: reply.response, hop },
      };
    }
    session.connection.close();
    const why = error?.message ?? 'the session ended without an answer';
    const refused = fromTransaction(
      recipients.filter((r) => envelope.rejectedErrors?.some((e) => e.recipient === r)),
      { response: '', responseCode: 0, rejectedErrors: envelope.rejectedErrors },
      hop,
    );
    const open = recipients.filter((r) => !refused.some((o) => o.recipient === r));
    if (dataSent) {
      // The message may have arrived: sending it elsewhere now could deliver it twice; a later
      // retry is the lesser risk (RFC 5321 6.1 accepts the rare duplicate).
      const deferred = open.map((r) =>
        fromUs(r, 'deferred', '4.4.2', `connection lost after the message was sent: ${why}`, hop),
      );
      return { settled: [...refused, ...deferred], unsettled: [], failure: failureOf(why, '4.4.2', hop) };
    }
    return {
      settled: refused,
      unsettled: open,
      failure: failureOf(why, noAnswerCode({ code: error?.code, message: why }), hop),
    };
  }

  async #open(host: string, address: string): Promise<Session | { failure: Failure }> {
    const o = this.#options;
    const connection = new SMTPConnection({
      host: address,
      port: o.port,
      name: o.heloName,
      opportunisticTLS: true,
      tls: { rejectUnauthorized: false, servername: host },
      connectionTimeout: o.connectionTimeoutMs,
      greetingTimeout: o.greetingTimeoutMs,
      socketTimeout: o.socketTimeoutMs,
      logger: false,
      debug: false,
    });
    const session: Session = { connection, host, openedAt: Date.now(), dead: false, idleTimer: undefined };
    const hop: Hop = { mx: host, tls: null };
    return new Promise((resolve) => {
      let settled = false;
      const fail = (error: NodemailerError) => {
        if (settled) return;
        settled = true;
        connection.close();
        const greeting = answered(error);
        // A server that greets with a refusal (421, 554) is passed over like one that does not answer.
        resolve({
          failure: greeting
            ? { code: greeting.responseCode, enhancedCode: null, response: greeting.response, hop }
            : failureOf(`${address}: ${error.message}`, noAnswerCode(error), hop),
        });
      };
      // Errors after the session began reach the send in flight through its callback; the
      // listener only marks the session dead (and keeps an 'error' event from throwing).
      connection.on('error', (error: NodemailerError) => {
        session.dead = true;
        fail(error);
      });
      connection.once('end', () => {
        session.dead = true;
        fail(Object.assign(new Error('the connection closed before the session began'), { code: 'ECONNECTION' }));
      });
      connection.connect((error?: Error | null) => {
        if (error) return fail(error as NodemailerError);
        if (settled) return;
        settled = true;
        resolve(session);
      });
    });
  }

  #sessions(host: string): HostSessions {
    let sessions = this.#hosts.get(host);
    if (!sessions) {
      // A host nobody is using and nothing is kept for is forgotten, so the map does not grow
      // with every domain ever sent to.
      const created: HostSessions = new HostSessions(this.#options.maxConnectionsPerHost, () => {
        if (this.#hosts.get(host) === created) this.#hosts.delete(host);
      });
      this.#hosts.set(host, created);
      sessions = created;
    }
    return sessions;
  }
}

interface Transacted {
  info?: SmtpAnswer;
  error?: NodemailerError;
  /** The envelope as nodemailer filled it in: `rejectedErrors` holds the refusals at RCPT. */
  envelope: { from: string; to: string[]; rejectedErrors?: SmtpAnswer['rejectedErrors'] };
  /** Whether any of the message went out (so a lost connection may have delivered it). */
  dataSent: boolean;
}

function transact(session: Session, recipients: string[], request: DeliveryRequest): Promise<Transacted> {
  const envelope: Transacted['envelope'] = { from: request.mailFrom, to: [...recipients] };
  const message = new PassThrough();
  message.end(request.raw);
  const lost = Object.assign(new Error('the connection closed'), { code: 'ECONNECTION' });
  return untilEnd<Transacted>(
    session,
    () => ({ error: lost, envelope, dataSent: message.readableDidRead }),
    (done) =>
      session.connection.send(envelope, message, (error, info) => {
        const dataSent = message.readableDidRead;
        done(
          error
            ? { error: error as NodemailerError, envelope, dataSent }
            : { info: info as SmtpAnswer, envelope, dataSent },
        );
      }),
  );
}

function reset(session: Session): Promise<boolean> {
  if (session.dead) return Promise.resolve(false);
  return untilEnd(
    session,
    () => false,
    (done) => session.connection.reset((error) => done(!error)),
  );
}

/**
 * Runs `start` and settles with what it reports, or with `ended()` if the connection ends
 * without a report: nodemailer does not call every pending callback when a connection goes away.
 * It emits 'end' just before it fails the send in flight, so the report gets a turn first.
 */
function untilEnd<T>(session: Session, ended: () => T, start: (done: (value: T) => void) => void): Promise<T> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (value: T) => {
      if (settled) return;
      settled = true;
      session.connection.off('end', onEnd);
      resolve(value);
    };
    const onEnd = () => setImmediate(() => done(ended()));
    session.connection.once('end', onEnd);
    start(done);
  });
}

function failureOf(response: string, enhancedCode: string, hop: Hop): Failure {
  return { code: null, enhancedCode, response, hop };
}

/** The sessions of one MX host: the ones idle for reuse, and the limit on those in use. */
class HostSessions {
  readonly #limit: number;
  readonly #onUnused: () => void;
  readonly #idle: Session[] = [];
  readonly #waiting: (() => void)[] = [];
  #active = 0;

  constructor(limit: number, onUnused: () => void) {
    this.#limit = limit;
    this.#onUnused = onUnused;
  }

  async acquire(): Promise<void> {
    if (this.#active < this.#limit) {
      this.#active++;
      return;
    }
    // The slot passes straight from release() to the next in line, so #active stays counted.
    await new Promise<void>((resolve) => this.#waiting.push(resolve));
  }

  release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#active--;
    this.#checkUnused();
  }

  #checkUnused(): void {
    if (this.#active === 0 && this.#idle.length === 0) this.#onUnused();
  }

  takeIdle(): Session | undefined {
    for (let session = this.#idle.pop(); session; session = this.#idle.pop()) {
      clearTimeout(session.idleTimer);
      if (!session.dead) return session;
    }
    return undefined;
  }

  /** Keeps a session for the next message, unless it is dead, too old, or `discard` says so. */
  putBack(session: Session, discard: boolean, options: { idleTimeoutMs: number; maxSessionAgeMs: number }): void {
    if (discard || session.dead || Date.now() - session.openedAt >= options.maxSessionAgeMs) {
      quit(session);
      return;
    }
    session.idleTimer = setTimeout(() => {
      const at = this.#idle.indexOf(session);
      if (at >= 0) this.#idle.splice(at, 1);
      quit(session);
      this.#checkUnused();
    }, options.idleTimeoutMs);
    session.idleTimer.unref();
    this.#idle.push(session);
  }

  closeIdle(): void {
    for (const session of this.#idle.splice(0)) {
      clearTimeout(session.idleTimer);
      quit(session);
    }
  }
}

/** QUIT for a live session (the polite end); a dead one has nothing left to close. */
function quit(session: Session): void {
  if (session.dead) return;
  session.dead = true;
  session.connection.quit();
}

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}
