import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** The address now belongs to the workspace: it is listed, counted, and nobody else may take it. */
export const AddressRegistered = defineEvent(
  'AddressRegistered',
  z.object({ addressId: z.string(), address: z.string(), domainId: z.string(), registeredAt: z.string() }),
);

/** The address is free again (deleted, or its create lost a race and was undone). */
export const AddressUnregistered = defineEvent(
  'AddressUnregistered',
  z.object({ addressId: z.string(), address: z.string(), unregisteredAt: z.string() }),
);

/** The domain is being deleted: no address may be registered on it from now on. */
export const AddressDomainClosed = defineEvent(
  'AddressDomainClosed',
  z.object({ domainId: z.string(), closedAt: z.string() }),
);

export const addressNameEvents = [AddressRegistered, AddressUnregistered, AddressDomainClosed];
export type AddressNameEvent =
  | EventOf<typeof AddressRegistered>
  | EventOf<typeof AddressUnregistered>
  | EventOf<typeof AddressDomainClosed>;

/**
 * Every address of a workspace is registered on one stream: uniqueness, the 1,000-address limit
 * and "no address on a domain being deleted" are decided on it, so racing creates have one winner.
 * Addresses are unique service-wide through their domains (a domain belongs to one workspace).
 */
export const addressNamesStream = (workspaceId: string) => `ws-${workspaceId}.addresses`;
