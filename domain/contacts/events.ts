import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const CONTACT_SOURCES = ['manual', 'auto', 'form'] as const;
export type ContactSource = (typeof CONTACT_SOURCES)[number];

/**
 * A contact entered the book. `audienceIds` are the audiences it joined at that instant (the
 * workspace's default audience always among them), so membership history starts here.
 */
export const ContactCreated = defineEvent(
  'ContactCreated',
  z.object({
    contactId: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    notes: z.string().nullable(),
    attributes: z.record(z.string(), z.string()),
    source: z.enum(CONTACT_SOURCES),
    audienceIds: z.array(z.string()),
    createdAt: z.string(),
  }),
);

/** The editable fields after the change, whole (attributes already merged). */
export const ContactUpdated = defineEvent(
  'ContactUpdated',
  z.object({
    contactId: z.string(),
    email: z.string(),
    name: z.string().nullable(),
    notes: z.string().nullable(),
    attributes: z.record(z.string(), z.string()),
    updatedAt: z.string(),
  }),
);

/** The contact left the book, and with it every audience it was in (at `deletedAt`). */
export const ContactDeleted = defineEvent(
  'ContactDeleted',
  z.object({ contactId: z.string(), email: z.string(), deletedAt: z.string() }),
);

/** Membership history: growth for any past window is counted from these and the two above. */
export const ContactJoinedAudience = defineEvent(
  'ContactJoinedAudience',
  z.object({ contactId: z.string(), email: z.string(), audienceId: z.string(), joinedAt: z.string() }),
);

export const ContactLeftAudience = defineEvent(
  'ContactLeftAudience',
  z.object({ contactId: z.string(), email: z.string(), audienceId: z.string(), leftAt: z.string() }),
);

/** Activity of the contact (mail to or from it, or an event about it): moves `lastSeenAt` forward. */
export const ContactSeen = defineEvent(
  'ContactSeen',
  z.object({ contactId: z.string(), email: z.string(), seenAt: z.string() }),
);

export const contactEvents = [
  ContactCreated,
  ContactUpdated,
  ContactDeleted,
  ContactJoinedAudience,
  ContactLeftAudience,
  ContactSeen,
];
export type ContactEvent =
  | EventOf<typeof ContactCreated>
  | EventOf<typeof ContactUpdated>
  | EventOf<typeof ContactDeleted>
  | EventOf<typeof ContactJoinedAudience>
  | EventOf<typeof ContactLeftAudience>
  | EventOf<typeof ContactSeen>;

/** Addresses compare without case or surrounding space; this is the form stored and keyed on. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

/** One stream per address: appending with the revision read keeps an address in the book once. */
export const contactStream = (workspaceId: string, email: string) =>
  `ws-${workspaceId}.contact-${normaliseEmail(email)}`;
