import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** What a name is held for: a domain added to a workspace, or a domain's tracking or storage host. */
export const NAME_USES = ['domain', 'tracking', 'storage'] as const;
export type NameUse = (typeof NAME_USES)[number];

export const DomainNameReserved = defineEvent(
  'DomainNameReserved',
  z.object({
    name: z.string(),
    use: z.enum(NAME_USES),
    workspaceId: z.string(),
    domainId: z.string(),
    reservedAt: z.string(),
  }),
);

export const DomainNameReleased = defineEvent(
  'DomainNameReleased',
  z.object({ name: z.string(), domainId: z.string(), releasedAt: z.string() }),
);

export const domainNameEvents = [DomainNameReserved, DomainNameReleased];
export type DomainNameEvent = EventOf<typeof DomainNameReserved> | EventOf<typeof DomainNameReleased>;

/**
 * One stream per DNS name across the whole service, outside every workspace's prefix: a name is
 * one workspace's domain, or one domain's tracking or storage host, never two at once. Appending
 * with the revision read is what makes one of two racing workspaces the winner.
 */
export const domainNameStream = (name: string) => `service.domain-name-${name}`;
