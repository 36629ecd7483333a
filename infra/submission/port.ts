/**
 * SMTP submission (RFC 6409) as the rest of the service sees it: a client logs in, names its
 * envelope and hands over a message, which the listener (infra/submission/listener.ts) parses and
 * gives to `submit`. What a login is and what a submission does are the sending slice's
 * (commands/emails/submission.ts).
 */

export interface SubmittedAddress {
  address: string;
  name: string;
}

export interface SubmittedAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
  /** Set for an inline part the html refers to as `cid:<contentId>`, without angle brackets. */
  contentId?: string;
}

/** A submitted message, parsed (mailparser): what the header says, and who the envelope names. */
export interface SubmittedMessage {
  /** The envelope: MAIL FROM and every RCPT TO, lower-cased. */
  mailFrom: string;
  rcptTo: string[];
  from: SubmittedAddress | null;
  to: SubmittedAddress[];
  cc: SubmittedAddress[];
  replyTo: SubmittedAddress[];
  subject: string | null;
  text: string | null;
  html: string | null;
  attachments: SubmittedAttachment[];
  /** Message-IDs without angle brackets. */
  inReplyTo: string | null;
  references: string[];
}

/** An SMTP reply to a refused command: code, enhanced status (RFC 3463) and text. */
export class SubmissionRefused extends Error {
  constructor(
    readonly code: number,
    readonly status: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the listener asks of the service. `P` is a logged-in client as the service knows it. */
export interface SubmissionPorts<P> {
  /** The login's principal, or null when the name or the password is wrong. */
  authenticate(login: string, password: string): Promise<P | null>;
  /** The one address a principal may name as MAIL FROM. */
  senderOf(principal: P): string;
  /** Sends the message; answers the id it is known by, or throws `SubmissionRefused`. */
  submit(principal: P, message: SubmittedMessage): Promise<string>;
}
