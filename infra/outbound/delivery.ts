import { enhancedCodeOf, statusOfReply, type RecipientStatus } from '../../domain/sending/smtp-reply.ts';

/**
 * The delivery port: hands one signed message to the next hop for some of its recipients and
 * says, per recipient, what became of it on this attempt. Two adapters: a relay
 * (`SMTP_RELAY_URL`, infra/outbound/relay.ts) and direct delivery to the recipients' MX hosts
 * (infra/outbound/direct.ts); infra/outbound/select.ts picks one. Retrying deferred recipients is
 * the caller's (domain/sending/retry.ts); nothing here keeps state between calls but connections.
 */
export interface DeliveryRequest {
  /** The envelope sender (MAIL FROM): the return path on the domain's bounce host. */
  mailFrom: string;
  /** Direct delivery takes one destination domain per call; a relay takes any. */
  recipients: string[];
  /** The signed RFC 5322 message, CRLF line ends. */
  raw: Buffer;
}

export interface RecipientOutcome {
  recipient: string;
  status: RecipientStatus;
  /** The server's reply code; null when no server answered for this recipient. */
  code: number | null;
  /** RFC 3463 code: from the reply, or ours when no server answered (4.4.1 no answer, 5.1.10 null MX, ...). */
  enhancedCode: string | null;
  /** The server's reply, or what happened in our words when none answered. For the message's history. */
  response: string;
  /** The host the answer came from or that was tried last (an MX name, or the relay); null when none was. */
  mx: string | null;
  /** Whether that session ran over TLS; null when the adapter cannot tell (a pooled relay). */
  tls: boolean | null;
}

export interface Delivery {
  /** Settles with one outcome per distinct recipient, in request order; rejects only for a malformed request. */
  deliver(request: DeliveryRequest): Promise<RecipientOutcome[]>;
  /** Waits for deliveries under way, then closes every connection; deliver() afterwards rejects. */
  close(): Promise<void>;
}

/** The parts of a nodemailer error or send result that say how the server answered. */
export interface SmtpAnswer {
  response?: string;
  responseCode?: number;
  /** Per recipient refusals (RCPT TO, or per recipient after DATA on LMTP). */
  rejectedErrors?: { recipient?: string; response?: string; responseCode?: number }[];
}

export type Hop = { mx: string | null; tls: boolean | null };

/** An outcome from a server's reply. */
export function fromReply(recipient: string, response: string, code: number, hop: Hop): RecipientOutcome {
  return { recipient, status: statusOfReply(code), code, enhancedCode: enhancedCodeOf(response), response, ...hop };
}

/** An outcome no server gave: our own words and an RFC 3463 code that says why. */
export function fromUs(
  recipient: string,
  status: RecipientStatus,
  enhancedCode: string,
  response: string,
  hop: Hop,
): RecipientOutcome {
  return { recipient, status, code: null, enhancedCode, response, ...hop };
}

/**
 * Outcomes of one SMTP transaction that got a server's answer: a recipient refused at RCPT gets
 * that refusal, every other one the transaction's last reply (the final reply to the message,
 * or the refusal of MAIL FROM or DATA that ended it).
 */
export function fromTransaction(
  recipients: string[],
  answer: SmtpAnswer & { response: string; responseCode: number },
  hop: Hop,
): RecipientOutcome[] {
  const refused = new Map<string, { response: string; code: number }>();
  for (const error of answer.rejectedErrors ?? []) {
    if (error.recipient !== undefined && error.response !== undefined && error.responseCode !== undefined) {
      refused.set(error.recipient, { response: error.response, code: error.responseCode });
    }
  }
  return recipients.map((recipient) => {
    const own = refused.get(recipient);
    return own
      ? fromReply(recipient, own.response, own.code, hop)
      : fromReply(recipient, answer.response, answer.responseCode, hop);
  });
}

/** Each recipient once, in order; throws a TypeError when there is none or one is not an address. */
export function checkedRecipients(recipients: readonly string[]): string[] {
  if (!Array.isArray(recipients) || recipients.length === 0) throw new TypeError('deliver: at least one recipient');
  for (const recipient of recipients) {
    if (typeof recipient !== 'string' || !/^[^\s<>@]+@[^\s<>@]+$/.test(recipient))
      throw new TypeError(`deliver: ${JSON.stringify(recipient)} is not an address`);
  }
  return [...new Set(recipients)];
}

const TRANSACTION_ERRORS = new Set(['EENVELOPE', 'EMESSAGE', 'ECONNECTION']);

/**
 * The server's reply in a nodemailer send result or error, when it speaks to the recipients (a
 * send result carries the reply text only: its code is read from it). Replies to MAIL, RCPT and
 * DATA do, and so does a server closing the session (421); a refused login, EHLO or STARTTLS
 * says something about the session, not the recipients, and counts as no answer.
 */
export function answered(
  value: (SmtpAnswer & { code?: unknown }) | null | undefined,
): (SmtpAnswer & { response: string; responseCode: number }) | null {
  if (!value || typeof value.response !== 'string') return null;
  if (value.code !== undefined && !TRANSACTION_ERRORS.has(value.code as string)) return null;
  const responseCode = value.responseCode ?? Number(/^[1-5]\d\d/.exec(value.response)?.[0]);
  if (!Number.isInteger(responseCode)) return null;
  return { ...value, response: value.response, responseCode };
}

/** RFC 3463 for a host that gave no answer: 4.4.1 none at all (refused, timed out), 4.4.2 a bad connection (reset, TLS, login). */
export function noAnswerCode(error: { code?: string; message: string }): string {
  return error.code === 'ETIMEDOUT' || /ECONNREFUSED|EHOSTUNREACH|ENETUNREACH/.test(error.message) ? '4.4.1' : '4.4.2';
}

/** The deliveries under way, so close() can wait for them before it closes connections. */
export class InFlight {
  readonly #work = new Set<Promise<unknown>>();

  async track<T>(work: Promise<T>): Promise<T> {
    this.#work.add(work);
    try {
      return await work;
    } finally {
      this.#work.delete(work);
    }
  }

  async settled(): Promise<void> {
    await Promise.allSettled([...this.#work]);
  }
}
