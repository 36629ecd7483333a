import type { Readable } from 'node:stream';
import type { BlobRef } from '../blobs/port.ts';

/**
 * What the inbound SMTP listener (infra/inbound/listener.ts) asks of the rest of the service:
 * whether a recipient is taken (at RCPT, before any bytes arrive) and what becomes of a message
 * once its bytes are stored. The receiving slice implements both; the listener only speaks SMTP.
 */

/** The connected client, as the session knows it. */
export interface InboundClient {
  /** The client's IP address (IPv4-mapped IPv6 written as IPv4). */
  address: string;
  /** The name it gave in HELO/EHLO (its claim, unchecked). */
  helo: string;
  /** Whether the session went through STARTTLS. */
  secure: boolean;
}

export interface RecipientQuestion {
  /** The RCPT TO address as the client wrote it. */
  address: string;
  /** MAIL FROM of the transaction; empty for the null sender (bounces, DSNs). */
  mailFrom: string;
  client: InboundClient;
}

/**
 * Taken, with whatever the slice resolved for it (the mailbox, the rules to run), handed back in
 * the message so nothing is looked up twice; or refused with an SMTP reply: 550 for no such
 * mailbox, 450/451 to be asked again later. The reply code picks the enhanced status code
 * (smtp-server's table: 550 → 5.1.1, 450 → 4.2.1, 451 → 4.3.0, 554 → 5.6.0).
 */
export type RecipientVerdict<R> = { accept: true; recipient: R } | { accept: false; code: number; message: string };

export interface RecipientPolicy<R> {
  accept(question: RecipientQuestion): Promise<RecipientVerdict<R>>;
}

export interface InboundMessage<R> {
  /** The session's id and the transaction's number: the queue id written in our Received line. */
  id: string;
  receivedAt: Date;
  client: InboundClient;
  /** Empty for the null sender. */
  mailFrom: string;
  recipients: { address: string; recipient: R }[];
  /** The stored message: our Return-Path and Received lines, then the bytes the client sent. */
  blob: BlobRef;
  /** A fresh stream of the stored bytes for each call, from memory when the message is small. */
  open(): Promise<Readable>;
}

/**
 * The answer to the end of DATA: 250, or a refusal (a `reject` rule: 550; a failure to finish
 * the work: 451, so the sender tries again). A handler that throws is answered 451.
 */
export type DeliveryVerdict = { accept: true } | { accept: false; code: number; message: string };

export interface InboundHandler<R> {
  receive(message: InboundMessage<R>): Promise<DeliveryVerdict>;
}
