import type { DraftContent } from '../drafts/events.ts';
import { checkDraft, type DraftInput } from '../drafts/rules.ts';
import { parseMailbox, parseMessageId } from '../emails/rules.ts';
import type { MailAddress, MessageSummary } from '../messages/summary.ts';

/**
 * `Name <address>`, the name quoted (RFC 5322) when it holds more than words of atext, so a comma
 * or a bracket in it stays the name's.
 */
const written = (name: string | null, address: string) => {
  const n = name?.replace(/[\r\n]+/g, ' ').trim();
  if (!n) return address;
  return /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~ -]+$/.test(n)
    ? `${n} <${address}>`
    : `"${n.replace(/["\\]/g, '\\$&')}" <${address}>`;
};

/** The addresses of a header that are addresses: a group's name or an empty field names none. */
const mailboxes = (list: MailAddress[]) =>
  list.filter((a) => parseMailbox(a.address) !== null).map((a) => written(a.name, a.address));

const ids = (list: string[]) => list.filter((id) => parseMessageId(id) !== null);

/**
 * The draft a takeout message labelled Draft becomes, in the import's mailbox: `from` is the
 * import's address (a draft belongs to the mailbox of its `from`, and the takeout's own address
 * may be no address of the workspace) with the message's display name; recipients, subject, body
 * and threading headers as the message has them, less what is no address or Message-ID. Its
 * attachments are the message's parts, made files by the command (commands/drafts
 * `importDraft`). Refused as a draft written through the API would be (`checkDraft`: more than 50
 * recipients or 20 attachments, a subject or body past its length), which the import counts as
 * not imported.
 */
export function importedDraftContent(
  s: MessageSummary,
  body: { text: string; html: string | null },
  address: string,
): Omit<DraftContent, 'attachments'> {
  const input: DraftInput = {
    from: written(s.from?.name ?? null, address),
    to: mailboxes(s.to),
    cc: mailboxes(s.cc),
    bcc: mailboxes(s.bcc),
    replyTo: mailboxes(s.replyTo),
    subject: s.subject === '' ? null : s.subject,
    text: body.text === '' ? null : body.text,
    html: body.html,
    // Only their number is checked here.
    attachments: s.attachments.map((a) => ({ fileId: a.sha256 })),
    inReplyTo: ids(s.inReplyTo)[0] ?? null,
    references: ids(s.references),
  };
  const { attachments: _files, ...rest } = input;
  return { ...rest, ...checkDraft(input), signatureId: null };
}
