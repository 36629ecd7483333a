import { openSmtpUrl, type SmtpUrlTransport } from '../mail/smtp.ts';
import {
  answered,
  checkedRecipients,
  fromTransaction,
  fromUs,
  InFlight,
  noAnswerCode,
  type Delivery,
  type DeliveryRequest,
  type Hop,
  type RecipientOutcome,
  type SmtpAnswer,
} from './delivery.ts';

/**
 * Delivery through one SMTP relay (`SMTP_RELAY_URL`, the form and rules of `SMTP_URL`:
 * `smtp://user:pass@host:587` with STARTTLS required off loopback, or `smtps://`), over
 * nodemailer's pooled SMTP transport. The relay's answer is the outcome: 250 means it took the
 * mail on (delivered, as far as we can see), its refusals are classified like an MX's. A
 * connection or login failure defers every recipient; the relay is the only next hop.
 *
 * The pooled transport reports refusals at RCPT when the message goes through or every
 * recipient is refused; when the relay refuses DATA after accepting some, every recipient gets
 * that refusal.
 */
export class RelayDelivery implements Delivery {
  readonly #smtp: SmtpUrlTransport;
  readonly #hop: Hop;
  readonly #inFlight = new InFlight();
  #closed = false;

  constructor(relayUrl: string) {
    this.#smtp = openSmtpUrl(relayUrl, 'SMTP_RELAY_URL');
    this.#hop = { mx: this.#smtp.endpoint, tls: null };
  }

  async deliver(request: DeliveryRequest): Promise<RecipientOutcome[]> {
    if (this.#closed) throw new Error('deliver: the relay is closed');
    const recipients = checkedRecipients(request.recipients);
    return this.#inFlight.track(this.#deliver(recipients, request));
  }

  async close(): Promise<void> {
    this.#closed = true;
    await this.#inFlight.settled();
    this.#smtp.transport.close();
  }

  async #deliver(recipients: string[], { mailFrom, raw }: DeliveryRequest): Promise<RecipientOutcome[]> {
    let result: SmtpAnswer;
    try {
      result = await this.#smtp.transport.sendMail({ envelope: { from: mailFrom, to: recipients }, raw });
    } catch (error) {
      const reply = answered(error as SmtpAnswer);
      if (reply) return fromTransaction(recipients, reply, this.#hop);
      const scrubbed = this.#smtp.scrubbed(error);
      return recipients.map((r) => fromUs(r, 'deferred', noAnswerCode(scrubbed), scrubbed.message, this.#hop));
    }
    const reply = answered(result);
    if (!reply)
      return recipients.map((r) => fromUs(r, 'deferred', '4.4.2', 'the relay gave no reply to the message', this.#hop));
    return fromTransaction(recipients, reply, this.#hop);
  }
}
