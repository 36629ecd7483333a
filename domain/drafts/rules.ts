import {
  ATTACHMENTS_MAX,
  BODY_MAX,
  checkMessageId,
  checkRecipientCount,
  parseMailbox,
  parseMailboxes,
  SUBJECT_MAX,
} from '../emails/rules.ts';
import { domainOf } from '../shared/allowlists.ts';
import { fail } from '../shared/errors.ts';

/** What a draft is written with: every field may still be missing, except `from`. */
export interface DraftInput {
  from: string;
  to: string[];
  cc: string[];
  bcc: string[];
  replyTo: string[];
  subject: string | null;
  text: string | null;
  html: string | null;
  attachments: { fileId: string }[];
  inReplyTo: string | null;
  references: string[];
}

/**
 * A draft's content as far as it is written: what is there must be what a send takes (addresses,
 * the recipient limit, lengths), so a draft never holds what no send could carry; what is missing
 * (recipients, subject, body) is the send's to refuse. Answers the mailbox of `from`.
 */
export function checkDraft(input: DraftInput): {
  address: string;
  domain: string;
  inReplyTo: string | null;
  references: string[];
} {
  const from = parseMailbox(input.from);
  if (!from) fail('invalid_email_address', `${JSON.stringify(input.from)} is not an email address.`, 'from');
  const recipients = new Set(
    (['to', 'cc', 'bcc'] as const).flatMap((kind) =>
      parseMailboxes(input[kind], kind).map((m) => m.email.toLowerCase()),
    ),
  );
  checkRecipientCount(recipients.size);
  parseMailboxes(input.replyTo, 'replyTo');
  if ((input.subject?.length ?? 0) > SUBJECT_MAX)
    fail('invalid_parameter', `At most ${SUBJECT_MAX} characters.`, 'subject');
  for (const part of ['text', 'html'] as const)
    if ((input[part]?.length ?? 0) > BODY_MAX) fail('invalid_parameter', `At most ${BODY_MAX} characters.`, part);
  if (input.attachments.length > ATTACHMENTS_MAX)
    fail('invalid_parameter', `At most ${ATTACHMENTS_MAX} attachments.`, 'attachments');
  const address = from.email.toLowerCase();
  return {
    address,
    domain: domainOf(address),
    inReplyTo: input.inReplyTo === null ? null : checkMessageId(input.inReplyTo, 'inReplyTo'),
    references: input.references.map((r, i) => checkMessageId(r, `references.${i}`)),
  };
}
