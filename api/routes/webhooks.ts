import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  replayWebhookDeliveries,
  requestWebhookTest,
  rotateWebhookSecret,
  updateWebhookEndpoint,
} from '../../commands/webhooks/handlers.ts';
import { allowlistsWithin, normaliseAllowlists } from '../../domain/shared/allowlists.ts';
import { deliveryIdOf, SUBSCRIPTION_PATTERN } from '../../domain/webhooks/catalogue.ts';
import {
  attemptsOf,
  countFailedSince,
  deliveryStats,
  findDelivery,
  findWebhookEndpoint,
  listDeliveries,
  listWebhookEndpoints,
  type WebhookEndpointRow,
} from '../../projections/webhooks/queries.ts';
import { webhookAudit } from '../../projections/webhooks/audit.ts';
import { actorOf, type Credential } from '../credential.ts';
import { ApiError } from '../errors/api-error.ts';
import { lookup } from '../lookups.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../paging.ts';
import { route } from '../route.ts';
import { addressAllowlist, dateTime, domainAllowlist } from '../schemas.ts';
import type { ApiDeps } from '../deps.ts';
import { deliveryView, endpointView, viewDelivery, viewEndpoint } from './webhook-views.ts';

const tags = ['Webhooks'];

const eventTypes = z
  .array(z.string().regex(SUBSCRIPTION_PATTERN, 'must be a family wildcard like `suppression.*` or an event name like `suppression.added`'))
  .max(50)
  .nullable()
  .optional()
  .describe('Omitted, null or empty: the default set (`email.*` but `email.replied`). Other families must be named.');
const settingsFields = {
  url: z.string().max(2048).describe('`https://` to a public address; `http://` and private addresses only where WEBHOOK_ALLOW_PRIVATE is set.'),
  description: z.string().max(500).nullable().optional(),
  eventTypes,
  addressAllowlist,
  domainAllowlist,
};
const idParams = z.object({ id: z.string() });
const deliveryParams = z.object({ id: z.string(), deliveryId: z.string() });
const webhookEndpointOr404 = lookup(findWebhookEndpoint, { code: 'resource_not_found', message: 'No such webhook endpoint.', param: 'id', pattern: /^whe_[0-9a-f]{24}$/ });
const deliveryOr404 = lookup(findDelivery, { code: 'resource_not_found', message: 'No such delivery of this endpoint.', param: 'deliveryId' });
const withSecret = endpointView.extend({ secret: z.string().describe('Shown only here: sign-check deliveries with it.') });

export function registerWebhooks(app: FastifyInstance, deps: ApiDeps): void {
  const endpointOr404 = (workspaceId: string, id: string) => webhookEndpointOr404(deps.db, workspaceId, id);
  const read = async (workspaceId: string, id: string) => viewEndpoint(await endpointOr404(workspaceId, id));
  const checkUrl = (url: string) => {
    const checked = deps.webhooks.checkUrl(url);
    if (!checked.ok) throw new ApiError('invalid_parameter', `\`url\`: ${checked.reason}`, 'url', 422);
    return checked.url.toString();
  };
  /**
   * A narrowed key writes only endpoints that hear no more than it may reach itself, and sends
   * (tests, replays) only to those. The spec names `addressAllowlist` as the param whichever list is wider.
   */
  const withinCaller = (credential: Credential, lists: { addressAllowlist: string[] | null; domainAllowlist: string[] | null }) => {
    if (!allowlistsWithin(normaliseAllowlists(lists), credential).ok) {
      throw new ApiError('capability_unsupported', 'A key narrowed to some addresses or domains may only manage endpoints narrowed inside its own lists.', 'addressAllowlist', 422);
    }
  };
  const endpointWithinCaller = async (credential: Credential, id: string): Promise<WebhookEndpointRow> => {
    const row = await endpointOr404(credential.workspaceId, id);
    withinCaller(credential, { addressAllowlist: row.address_allowlist, domainAllowlist: row.domain_allowlist });
    return row;
  };

  route(app, {
    method: 'GET',
    url: '/webhooks',
    summary: 'List webhook endpoints',
    description: 'Scope: `webhooks:read`. Newest first; never the secret.',
    tags,
    scope: 'webhooks:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(endpointView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'webhooks',
        rows: (after, limit) => listWebhookEndpoints(deps.db, credential.workspaceId, limit, after),
        key: createdKey,
        view: viewEndpoint,
      }),
  });

  route(app, {
    method: 'POST',
    url: '/webhooks',
    stepUp: true,
    summary: 'Create a webhook endpoint',
    description: 'Scope: `webhooks:write`. Enabled at once; the signing `secret` is in this answer only. At most 10 endpoints.',
    tags,
    scope: 'webhooks:write',
    body: z.strictObject(settingsFields),
    status: 201,
    response: withSecret,
    handler: async ({ credential, body, request }) => {
      const settings = {
        url: checkUrl(body.url),
        description: body.description ?? null,
        eventTypes: body.eventTypes ?? null,
        addressAllowlist: body.addressAllowlist ?? null,
        domainAllowlist: body.domainAllowlist ?? null,
      };
      withinCaller(credential, settings);
      const { endpointId, secret } = await createWebhookEndpoint(deps.commands, actorOf(credential, request.id), settings, new Date().toISOString());
      return { ...(await read(credential.workspaceId, endpointId)), secret };
    },
  });

  route(app, {
    method: 'GET',
    url: '/webhooks/:id',
    summary: 'Read a webhook endpoint',
    tags,
    scope: 'webhooks:read',
    params: idParams,
    response: endpointView,
    handler: async ({ credential, params }) => read(credential.workspaceId, params.id),
  });

  route(app, {
    method: 'PATCH',
    url: '/webhooks/:id',
    stepUp: true,
    summary: 'Update a webhook endpoint',
    description:
      'Scope: `webhooks:write`. Omitted fields stay. `enabled: false` switches it off (disabledAt and disabledReason stay null); ' +
      '`enabled: true` switches it on and starts the failure count again.',
    tags,
    scope: 'webhooks:write',
    params: idParams,
    body: z.strictObject({ ...settingsFields, url: settingsFields.url.optional(), enabled: z.boolean().optional() }),
    response: endpointView,
    handler: async ({ credential, params, body, request }) => {
      const row = await endpointWithinCaller(credential, params.id);
      const settings = {
        ...(body.url !== undefined ? { url: checkUrl(body.url) } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.eventTypes !== undefined ? { eventTypes: body.eventTypes } : {}),
        ...(body.addressAllowlist !== undefined ? { addressAllowlist: body.addressAllowlist } : {}),
        ...(body.domainAllowlist !== undefined ? { domainAllowlist: body.domainAllowlist } : {}),
      };
      withinCaller(credential, {
        addressAllowlist: settings.addressAllowlist !== undefined ? settings.addressAllowlist : row.address_allowlist,
        domainAllowlist: settings.domainAllowlist !== undefined ? settings.domainAllowlist : row.domain_allowlist,
      });
      await updateWebhookEndpoint(deps.commands, actorOf(credential, request.id), { endpointId: row.id, settings, enabled: body.enabled }, new Date().toISOString());
      return read(credential.workspaceId, row.id);
    },
  });

  route(app, {
    method: 'DELETE',
    url: '/webhooks/:id',
    summary: 'Delete a webhook endpoint',
    description: 'Scope: `webhooks:write`. Its pending deliveries and its delivery log go with it.',
    tags,
    scope: 'webhooks:write',
    params: idParams,
    response: z.object({ object: z.literal('webhook_endpoint'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinCaller(credential, params.id);
      await deleteWebhookEndpoint(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { object: 'webhook_endpoint' as const, id: row.id, deleted: true as const };
    },
  });

  route(app, {
    method: 'POST',
    url: '/webhooks/:id/rotate-secret',
    summary: 'Rotate the signing secret',
    description: 'Scope: `webhooks:write`. The new secret is in this answer only; the previous one keeps signing beside it for 24 hours.',
    tags,
    scope: 'webhooks:write',
    params: idParams,
    response: withSecret,
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinCaller(credential, params.id);
      const { secret } = await rotateWebhookSecret(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { ...(await read(credential.workspaceId, row.id)), secret };
    },
  });

  const deliveryOf = async (endpointId: string, deliveryId: string) => {
    const d = await deliveryOr404(deps.db, endpointId, deliveryId);
    return viewDelivery(d, (await attemptsOf(deps.db, [d.id])).get(d.id) ?? []);
  };

  route(app, {
    method: 'POST',
    url: '/webhooks/:id/test',
    summary: 'Send a test event',
    description: 'Scope: `webhooks:write`. Queues one `webhook.test` delivery to this endpoint, whatever it subscribes to; 409 `webhook_disabled` when disabled.',
    tags,
    scope: 'webhooks:write',
    params: idParams,
    status: 202,
    response: deliveryView,
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinCaller(credential, params.id);
      const { position } = await requestWebhookTest(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return deliveryOf(row.id, deliveryIdOf(position!, row.id));
    },
  });

  route(app, {
    method: 'GET',
    url: '/webhooks/:id/deliveries',
    summary: 'The delivery log',
    description: 'Scope: `webhooks:read`. Newest first, each delivery with its attempts (status code, duration, error, start of the answer).',
    tags,
    scope: 'webhooks:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam, status: z.enum(['pending', 'delivered', 'failed']).optional() }),
    response: pageSchema(deliveryView),
    handler: async ({ credential, params, query }) => {
      const row = await endpointOr404(credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `webhook-deliveries:${row.id}`,
        rows: async (after: [string, string] | null, limit) => {
          const rows = await listDeliveries(deps.db, row.id, { status: query.status }, limit, after);
          const attempts = await attemptsOf(deps.db, rows.slice(0, limit).map((d) => d.id));
          return rows.map((delivery) => ({ delivery, attempts: attempts.get(delivery.id) ?? [] }));
        },
        key: ({ delivery }) => createdKey(delivery),
        view: ({ delivery, attempts }) => viewDelivery(delivery, attempts),
      });
    },
  });

  route(app, {
    method: 'GET',
    url: '/webhooks/:id/deliveries/:deliveryId',
    summary: 'Read a delivery',
    tags,
    scope: 'webhooks:read',
    params: deliveryParams,
    response: deliveryView,
    handler: async ({ credential, params }) => deliveryOf((await endpointOr404(credential.workspaceId, params.id)).id, params.deliveryId),
  });

  route(app, {
    method: 'POST',
    url: '/webhooks/:id/deliveries/:deliveryId/replay',
    summary: 'Replay one delivery',
    description: 'Scope: `webhooks:write`. Sends it again now (same `webhook-id`), whatever its status; 409 `webhook_disabled` when the endpoint is disabled.',
    tags,
    scope: 'webhooks:write',
    params: deliveryParams,
    status: 202,
    response: deliveryView,
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinCaller(credential, params.id);
      await deliveryOf(row.id, params.deliveryId);
      await replayWebhookDeliveries(deps.commands, actorOf(credential, request.id), { endpointId: row.id, deliveryIds: [params.deliveryId], since: null }, new Date().toISOString());
      return deliveryOf(row.id, params.deliveryId);
    },
  });

  route(app, {
    method: 'POST',
    url: '/webhooks/:id/replay',
    summary: 'Replay failed deliveries',
    description: 'Scope: `webhooks:write`. Every failed delivery created at or after `since` is sent again; 409 `webhook_disabled` when the endpoint is disabled.',
    tags,
    scope: 'webhooks:write',
    params: idParams,
    body: z.strictObject({ since: dateTime }),
    status: 202,
    response: z.object({ object: z.literal('webhook_replay'), endpointId: z.string(), since: z.string(), replayed: z.number().int() }),
    handler: async ({ credential, params, body, request }) => {
      const row = await endpointWithinCaller(credential, params.id);
      const since = new Date(body.since).toISOString();
      const replayed = await countFailedSince(deps.db, row.id, since);
      await replayWebhookDeliveries(deps.commands, actorOf(credential, request.id), { endpointId: row.id, deliveryIds: null, since }, new Date().toISOString());
      return { object: 'webhook_replay' as const, endpointId: row.id, since, replayed };
    },
  });

  route(app, {
    method: 'GET',
    url: '/webhooks/:id/audit',
    summary: 'The audit log of an endpoint',
    description: 'Scope: `webhooks:read`. Every change of the endpoint, oldest first, from the event store; secrets are never shown.',
    tags,
    scope: 'webhooks:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(
      z.object({ object: z.literal('webhook_audit_entry'), type: z.string(), at: z.string(), actor: z.unknown(), requestId: z.string().nullable(), data: z.record(z.string(), z.unknown()) }),
    ),
    handler: async ({ credential, params, query }) => {
      const row = await endpointOr404(credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `webhook-audit:${row.id}`,
        rows: (after: [number] | null, limit) => webhookAudit(deps.history, credential.workspaceId, row.id, after ? Number(after[0]) : -1, limit),
        key: (e) => [e.revision],
        view: ({ revision: _r, ...e }) => ({ object: 'webhook_audit_entry' as const, ...e }),
      });
    },
  });

  route(app, {
    method: 'GET',
    url: '/webhooks/:id/stats',
    summary: 'Delivery statistics',
    description: 'Scope: `webhooks:read`. Deliveries by status and attempts since `since` (default: the last 24 hours), with attempt durations.',
    tags,
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
      const row = await endpointOr404(credential.workspaceId, params.id);
      const since = query.since ? new Date(query.since).toISOString() : new Date(Date.now() - 24 * 3600_000).toISOString();
      return { object: 'webhook_stats' as const, endpointId: row.id, since, ...(await deliveryStats(deps.db, row.id, since)) };
    },
  });
}
