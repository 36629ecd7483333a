import { z } from 'zod';
import { deliveryStats } from '../../../projections/webhooks/queries.ts';
import type { ApiDeps } from '../../deps.ts';
import { operation, type Operation } from '../../route.ts';
import { dateTime } from '../../schemas.ts';
import { endpointOr404, idParams } from './views.ts';

/** `/webhooks/:id/stats`: an endpoint's delivery statistics. */
export const statsOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/webhooks/:id/stats',
    operationId: 'getWebhookStats',
    errors: ['resource_not_found'],
    summary: 'Delivery statistics',
    description:
      'Scope: `webhooks:read`. Deliveries by status and attempts since `since` (default: the last 24 hours), with attempt durations.',
    scope: 'webhooks:read',
    params: idParams,
    query: z.strictObject({ since: dateTime.optional() }),
    response: z.object({
      object: z.literal('webhook_stats'),
      endpointId: z.string(),
      since: z.string(),
      deliveries: z.object({ pending: z.number().int(), delivered: z.number().int(), failed: z.number().int() }),
      attempts: z.object({ total: z.number().int(), succeeded: z.number().int(), failed: z.number().int() }),
      durationMs: z.object({ p50: z.number().nullable(), p95: z.number().nullable() }),
    }),
    handler: async ({ credential, params, query }) => {
      const row = await endpointOr404(deps.db, credential.workspaceId, params.id);
      const since = query.since
        ? new Date(query.since).toISOString()
        : new Date(Date.now() - 24 * 3600_000).toISOString();
      return {
        object: 'webhook_stats' as const,
        endpointId: row.id,
        since,
        ...(await deliveryStats(deps.db, row.id, since)),
      };
    },
  }),
];
