import type { MailTrigger } from './events.ts';

/** What a mail trigger looks at in an arriving message. */
export interface ArrivingMail {
  /** The workspace's address (lower-cased) the message arrived at. */
  mailbox: string;
  /** The sender's address, lower-cased, and display name. */
  fromAddress: string;
  fromName: string | null;
  subject: string;
}

const contains = (haystack: string, needle: string | null) =>
  needle === null || haystack.toLowerCase().includes(needle.toLowerCase());

/**
 * Whether arriving mail starts a run of a mail-triggered task: at one of its addresses (any, when
 * it names none), matching both filters (case-insensitive; the sender filter reads the name and
 * the address), and never mail from the workspace's own addresses (`ownAddress`), so a task that
 * sends cannot start itself or another task in a loop.
 */
export function mailStartsRun(
  trigger: MailTrigger,
  mail: ArrivingMail,
  ownAddress: (address: string) => boolean,
): boolean {
  if (ownAddress(mail.fromAddress)) return false;
  if (trigger.addresses.length > 0 && !trigger.addresses.includes(mail.mailbox)) return false;
  const sender = mail.fromName ? `${mail.fromName} <${mail.fromAddress}>` : mail.fromAddress;
  return contains(sender, trigger.senderContains) && contains(mail.subject, trigger.subjectContains);
}
