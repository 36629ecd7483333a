import { DomainError } from '../../domain/shared/errors.ts';
import {
  type SubmissionPorts,
  SubmissionRefused,
  type SubmittedAddress,
  type SubmittedMessage,
} from '../../infra/submission/port.ts';
import { hashAppPassword, verifyAppPassword } from '../addresses/passwords.ts';
import { type SendContext, sendEmail } from './handlers.ts';

/** An address logged in over SMTP submission: it may send as itself only. */
export interface SubmissionLogin {
  workspaceId: string;
  addressId: string;
  /** Lower-case. */
  address: string;
}

/** The address a login name (an address, or its custom username) holds, and its app passwords' hashes. */
export type LoginLookup = (login: string) => Promise<(SubmissionLogin & { passwordHashes: string[] }) | undefined>;

/**
 * A refusal of `sendEmail` as an SMTP reply. Temporary where waiting helps (the month's
 * allowance), 5.7.1 where the login may not send so, 5.1.3 for an address that is not one, and
 * 5.6.0 for the message itself (what the API answers 422 for); the text is the API's message.
 */
function replyOf(error: DomainError): SubmissionRefused {
  const text = `${error.message}${error.param ? ` (${error.param})` : ''}`;
  switch (error.code) {
    case 'send_quota_exceeded':
      return new SubmissionRefused(452, '4.2.2', text);
    case 'from_address_forbidden':
    case 'address_disabled':
      return new SubmissionRefused(550, '5.7.1', text);
    case 'invalid_email_address':
      return new SubmissionRefused(553, '5.1.3', text);
    case 'too_many_recipients':
      return new SubmissionRefused(550, '5.5.3', text);
    default:
      return new SubmissionRefused(554, '5.6.0', text);
  }
}

const mailbox = (a: SubmittedAddress) =>
  a.name ? `"${a.name.replace(/["\\]/g, (c) => `\\${c}`)}" <${a.address}>` : a.address;

/**
 * SMTP submission over `sendEmail`, the one way every send goes in: a login is an address's
 * login name and one of its app passwords (checked as commands/addresses/passwords.ts made them);
 * the sender reaches that address only, so a From of another address is refused as the API
 * refuses it (`from_address_forbidden`). The envelope decides who receives the message: a
 * recipient in To or Cc keeps its place and name there, every other one of RCPT TO is a Bcc
 * (never written in the headers), and a header address not in the envelope gets nothing.
 */
export function submissionPorts(ctx: SendContext, lookup: LoginLookup): SubmissionPorts<SubmissionLogin> {
  // An unknown name costs one hash check too, so the time taken does not tell which names exist.
  let decoy: Promise<string> | null = null;
  return {
    async authenticate(login, password) {
      const found = await lookup(login);
      if (!found) {
        decoy ??= hashAppPassword('decoy');
        await verifyAppPassword(password, await decoy);
        return null;
      }
      for (const hash of found.passwordHashes)
        if (await verifyAppPassword(password, hash))
          return { workspaceId: found.workspaceId, addressId: found.addressId, address: found.address };
      return null;
    },
    senderOf: (login) => login.address,
    async submit(login, message: SubmittedMessage) {
      const envelope = new Set(message.rcptTo);
      const inEnvelope = (list: SubmittedAddress[]) => list.filter((a) => envelope.has(a.address));
      const to = inEnvelope(message.to);
      const cc = inEnvelope(message.cc);
      const shown = new Set([...to, ...cc].map((a) => a.address));
      try {
        const { email } = await sendEmail(
          ctx,
          {
            actor: { workspaceId: login.workspaceId, kind: 'address', id: login.addressId },
            mode: 'live',
            reach: { addresses: [login.address], domains: [] },
            source: 'submission',
          },
          {
            from: message.from ? mailbox(message.from) : message.mailFrom,
            to: to.map(mailbox),
            cc: cc.map(mailbox),
            bcc: [...envelope].filter((a) => !shown.has(a)),
            replyTo: message.replyTo.map(mailbox),
            ...(message.subject !== null ? { subject: message.subject } : {}),
            ...(message.text !== null ? { text: message.text } : {}),
            ...(message.html !== null ? { html: message.html } : {}),
            attachments: message.attachments.map((a) => ({
              filename: a.filename,
              content: a.content.toString('base64'),
              contentType: a.contentType,
              ...(a.contentId !== undefined ? { contentId: a.contentId } : {}),
            })),
            ...(message.inReplyTo !== null ? { inReplyTo: message.inReplyTo } : {}),
            references: message.references,
          },
          new Date(),
        );
        return email.emailId;
      } catch (error) {
        if (error instanceof DomainError) throw replyOf(error);
        throw error;
      }
    },
  };
}
