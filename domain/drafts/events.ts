import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * A message being written, one stream per draft, in the mailbox of its `from` address. A draft is
 * loose where a send is strict (recipients, subject and body may be missing while it is written);
 * sending it hands it to the sending pipeline (commands/emails `sendEmail`), whose checks then all
 * apply, and the draft is gone. Attachments are files (domain/files) named by id: their bytes stay
 * in the blob store, never in an event.
 */

export const DraftAttachment = z.object({
  fileId: z.string(),
  filename: z.string().nullable(),
  contentType: z.string(),
  size: z.number().int(),
});
export type DraftAttachment = z.infer<typeof DraftAttachment>;

export const DraftContent = z.object({
  /** As written (`Name <a@example.com>` or the bare address). */
  from: z.string(),
  /** The mailbox: the lower-cased address of `from`, and its domain (allowlists narrow by both). */
  address: z.string(),
  domain: z.string(),
  to: z.array(z.string()),
  cc: z.array(z.string()),
  bcc: z.array(z.string()),
  replyTo: z.array(z.string()),
  subject: z.string().nullable(),
  text: z.string().nullable(),
  html: z.string().nullable(),
  signatureId: z.string().nullable(),
  attachments: z.array(DraftAttachment),
  inReplyTo: z.string().nullable(),
  references: z.array(z.string()),
});
export type DraftContent = z.infer<typeof DraftContent>;

export const DraftCreated = defineEvent(
  'DraftCreated',
  z.object({ draftId: z.string(), content: DraftContent, at: z.string() }),
);

/** The whole content after the change (a PATCH merged with what was stored). */
export const DraftUpdated = defineEvent(
  'DraftUpdated',
  z.object({ draftId: z.string(), content: DraftContent, at: z.string() }),
);

export const DraftDeleted = defineEvent('DraftDeleted', z.object({ draftId: z.string(), at: z.string() }));

/**
 * About to be handed to the sending pipeline as `emailId`, with the content as it stands here:
 * edits and deletes are refused (409 `draft_sending`) until the draft is sent or handed back, or
 * the hold lapses (`SEND_HOLD_MS`, a send that died midway).
 */
export const DraftSending = defineEvent(
  'DraftSending',
  z.object({ draftId: z.string(), emailId: z.string(), at: z.string() }),
);

/** The send was refused (a check of `sendEmail`): the draft is as it was, open to edits again. */
export const DraftSendRefused = defineEvent(
  'DraftSendRefused',
  z.object({ draftId: z.string(), emailId: z.string(), at: z.string() }),
);

/** Handed to the sending pipeline as `emailId`; the draft is gone from then on. */
export const DraftSent = defineEvent(
  'DraftSent',
  z.object({ draftId: z.string(), emailId: z.string(), at: z.string() }),
);

export const draftEvents = [DraftCreated, DraftUpdated, DraftDeleted, DraftSending, DraftSendRefused, DraftSent];
export type DraftEvent =
  | EventOf<typeof DraftCreated>
  | EventOf<typeof DraftUpdated>
  | EventOf<typeof DraftDeleted>
  | EventOf<typeof DraftSending>
  | EventOf<typeof DraftSendRefused>
  | EventOf<typeof DraftSent>;

export const draftStream = (partition: string, draftId: string) => `ws-${partition}.draft-${draftId}`;
