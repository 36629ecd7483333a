import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const AddressUsernameReserved = defineEvent(
  'AddressUsernameReserved',
  z.object({ username: z.string(), workspaceId: z.string(), addressId: z.string(), reservedAt: z.string() }),
);

export const AddressUsernameReleased = defineEvent(
  'AddressUsernameReleased',
  z.object({ username: z.string(), addressId: z.string(), releasedAt: z.string() }),
);

export const addressUsernameEvents = [AddressUsernameReserved, AddressUsernameReleased];
export type AddressUsernameEvent = EventOf<typeof AddressUsernameReserved> | EventOf<typeof AddressUsernameReleased>;

/**
 * One stream per custom login name across the service, outside every workspace's prefix: an SMTP
 * client logs in with the name alone, so two addresses of any workspaces never share one.
 * Addresses themselves need no stream: they are unique through their domains, and a custom name
 * never holds `@`.
 */
export const addressUsernameStream = (username: string) => `service.address-username-${username}`;
