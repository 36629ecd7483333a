import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** One consent mail to `destination` may go (the forward's own event carries what it says). */
export const ForwardConsentMailAllowed = defineEvent(
  'ForwardConsentMailAllowed',
  z.object({
    destination: z.string(),
    workspaceId: z.string(),
    forwardId: z.string(),
    allowedAt: z.string(),
  }),
);

export const addressConsentEvents = [ForwardConsentMailAllowed];
export type AddressConsentEvent = EventOf<typeof ForwardConsentMailAllowed>;

/**
 * One stream per destination across the service: however many workspaces ask to forward to an
 * address, it receives a bounded number of consent mails, so the service cannot be used to flood it.
 */
export const forwardConsentStream = (destination: string) => `service.forward-consent-${destination}`;
