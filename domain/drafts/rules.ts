import {
  ATTACHMENTS_MAX,
  BODY_MAX,
  parseMailbox,
  parseMailboxes,
  parseMessageId,
  RECIPIENTS_MAX,
  SUBJECT_MAX,
} from '../emails/rules.ts';
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
  if (recipients.size > RECIPIENTS_MAX)
    fail(
      'too_many_recipients',
      `At most ${RECIPIENTS_MAX} recipients (to, cc and bcc together); this has ${recipients.size}.`,
      'to',
    );
  parseMailboxes(input.replyTo, 'replyTo');
  if ((input.subject?.length ?? 0) > SUBJECT_MAX)
    fail('invalid_parameter', `At most ${SUBJECT_MAX} characters.`, 'subject');
  for (const part of ['text', 'html'] as const)
    if ((input[part]?.length ?? 0) > BODY_MAX) fail('invalid_parameter', `At most ${BODY_MAX} characters.`, part);
  if (input.attachments.length > ATTACHMENTS_MAX)
    fail('invalid_parameter', `At most ${ATTACHMENTS_MAX} attachments.`, 'attachments');
  const messageId = (value: string, param: string) => {
    const id = parseMessageId(value);
    if (id === null) fail('invalid_parameter', 'A Message-ID: `<local@domain>`, brackets optional.', param);
    return id;
  };
  const address = from.email.toLowerCase();
  return {
    address,
    domain: address.slice(address.lastIndexOf('@') + 1),
    inReplyTo: input.inReplyTo === null ? null : messageId(input.inReplyTo, 'inReplyTo'),
    references: input.references.map((r, i) => messageId(r, `references.${i}`)),
  };
}
