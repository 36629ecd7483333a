import type { Resource } from '../../route.ts';
import { auditOperations } from './audit.ts';
import { deliveryOperations } from './deliveries.ts';
import { endpointOperations } from './operations.ts';
import { statsOperations } from './stats.ts';

/**
 * Webhook endpoints, their deliveries, audit log and statistics. An endpoint hears only what its
 * allowlists cover, so a narrowed credential writes only endpoints inside its own lists.
 */
export const webhooks: Resource = {
  tag: 'Webhooks',
  description: 'Webhook endpoints, their deliveries, audit log and delivery statistics.',
  modes: 'partitioned',
  narrowed: 'within-lists',
  operations: (deps) => [
    ...endpointOperations(deps),
    ...deliveryOperations(deps),
    ...auditOperations(deps),
    ...statsOperations(deps),
  ],
};
