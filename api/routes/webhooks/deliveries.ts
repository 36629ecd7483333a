import { z } from 'zod';
import { replayWebhookDeliveries } from '../../../commands/webhooks/handlers.ts';
import { attemptsOf, listDeliveries } from '../../../projections/webhooks/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import {
  deliveryOf,
  deliveryParams,
  deliveryView,
  endpointOr404,
  endpointWithinLists,
  idParams,
  viewDelivery,
} from './views.ts';

/** `/webhooks/:id/deliveries…`: an endpoint's delivery log. */
export const deliveryOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/webhooks/:id/deliveries',
    operationId: 'listWebhookDeliveries',
    errors: ['resource_not_found'],
    summary: 'The delivery log',
    description:
      'Scope: `webhooks:read`. Newest first, each delivery with its attempts (status code, duration, error, start of the answer).',
    scope: 'webhooks:read',
    params: idParams,
    query: z.strictObject({
      limit: limitParam(),
      cursor: cursorParam,
      status: z.enum(['pending', 'delivered', 'failed']).optional(),
    }),
    response: pageSchema(deliveryView),
    handler: async ({ credential, params, query }) => {
      const row = await endpointOr404(deps.db, credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `webhook-deliveries:${row.id}`,
        rows: async (after: [string, string] | null, limit) => {
          const rows = await listDeliveries(deps.db, row.id, { status: query.status }, limit, after);
          const attempts = await attemptsOf(
            deps.db,
            rows.slice(0, limit).map((d) => d.id),
          );
          return rows.map((delivery) => ({ delivery, attempts: attempts.get(delivery.id) ?? [] }));
        },
        key: ({ delivery }) => createdKey(delivery),
        view: ({ delivery, attempts }) => viewDelivery(delivery, attempts),
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/webhooks/:id/deliveries/:deliveryId',
    operationId: 'getWebhookDelivery',
    errors: ['resource_not_found'],
    summary: 'Read a delivery',
    scope: 'webhooks:read',
    params: deliveryParams,
    response: deliveryView,
    handler: async ({ credential, params }) =>
      deliveryOf(deps.db, (await endpointOr404(deps.db, credential.workspaceId, params.id)).id, params.deliveryId),
  }),

  operation({
    method: 'POST',
    url: '/webhooks/:id/deliveries/:deliveryId/replay',
    operationId: 'replayWebhookDelivery',
    errors: ['resource_not_found', 'webhook_disabled'],
    summary: 'Replay one delivery',
    description:
      'Scope: `webhooks:write`. Sends it again now (same `webhook-id`), whatever its status; 409 `webhook_disabled` when the endpoint is disabled.',
    scope: 'webhooks:write',
    params: deliveryParams,
    status: 202,
    response: deliveryView,
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinLists(deps.db, credential, params.id);
      await deliveryOf(deps.db, row.id, params.deliveryId);
      await replayWebhookDeliveries(
        deps.commands,
        actorOf(credential, request.id),
        { endpointId: row.id, deliveryIds: [params.deliveryId], since: null },
        new Date().toISOString(),
      );
      return deliveryOf(deps.db, row.id, params.deliveryId);
    },
  }),
];
