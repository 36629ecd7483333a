import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** A person known to the service, whichever workspaces they are in; the email never changes. */
export const AccountCreated = defineEvent(
  'AccountCreated',
  z.object({
    userId: z.string(),
    email: z.string(),
    name: z.string(),
    image: z.string().nullable(),
    createdAt: z.string(),
  }),
);

export const accountEvents = [AccountCreated];
export type AccountEvent = EventOf<typeof AccountCreated>;

/**
 * One stream per email across the service: appending to it is the reservation that gives an email
 * exactly one account, so two acceptances racing for a new person make one account.
 */
export const accountStream = (email: string) => `service.account-${email.toLowerCase()}`;
