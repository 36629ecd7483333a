import type { Resource } from '../../route.ts';
import { contactEventOperations } from './operations.ts';

/** Events about contacts (sign-ups, purchases, …) that automations react to. Narrowed credentials are refused, as on the book. */
export const contactEvents: Resource = {
  tag: 'Contact events',
  description: 'Events about contacts (sign-ups, purchases, …) that automations react to.',
  modes: 'partitioned',
  narrowed: 'refuse',
  operations: contactEventOperations,
};
