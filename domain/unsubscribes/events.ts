import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';
import { normaliseAddress } from '../suppressions/events.ts';

/**
 * How an unsubscribe came: the recipient's one-click POST (RFC 8058) or preferences page, both
 * their own choice, or the workspace through the API on their behalf (asked by reply, say).
 */
export const UNSUBSCRIBE_SOURCES = ['one-click', 'preferences', 'api'] as const;
export type UnsubscribeSource = (typeof UNSUBSCRIBE_SOURCES)[number];

/**
 * An address left one audience (`audienceId`) or everything the workspace sends in numbers
 * (`audienceId` null). `contactId` is the contact the address was at that instant, if any.
 * Delivered to webhook endpoints as `contact.unsubscribed`.
 */
export const ContactUnsubscribed = defineEvent(
  'ContactUnsubscribed',
  z.object({
    unsubscribeId: z.string(),
    email: z.string(),
    contactId: z.string().nullable(),
    audienceId: z.string().nullable(),
    source: z.enum(UNSUBSCRIBE_SOURCES),
    createdAt: z.string(),
    /** The message whose link or header it came through, when known: template analytics count it against that send. */
    emailId: z.string().nullable().optional(),
  }),
);

/** The unsubscribe no longer holds: the recipient rejoined (`by: recipient`) or the workspace removed it. */
export const UnsubscribeRemoved = defineEvent(
  'UnsubscribeRemoved',
  z.object({
    unsubscribeId: z.string(),
    email: z.string(),
    audienceId: z.string().nullable(),
    by: z.enum(['recipient', 'workspace']),
    removedAt: z.string(),
  }),
);

export const unsubscribeEvents = [ContactUnsubscribed, UnsubscribeRemoved];
export type UnsubscribeEvent = EventOf<typeof ContactUnsubscribed> | EventOf<typeof UnsubscribeRemoved>;

/** One stream per address: every scope (all, each audience) of one recipient is decided together. */
export const unsubscribeStream = (workspaceId: string, email: string) =>
  `ws-${workspaceId}.unsubscribe-${normaliseAddress(email)}`;
