import { z } from 'zod';
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  replayWebhookDeliveries,
  requestWebhookTest,
  rotateWebhookSecret,
  updateWebhookEndpoint,
} from '../../../commands/webhooks/handlers.ts';
import { deliveryIdOf, SUBSCRIPTION_PATTERN } from '../../../domain/webhooks/catalogue.ts';
import { countFailedSince, listWebhookEndpoints } from '../../../projections/webhooks/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { requireWithinLists } from '../../narrowing.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { addressAllowlist, dateTime, domainAllowlist } from '../../schemas.ts';
import {
  deliveryOf,
  deliveryView,
  endpointView,
  endpointWithinLists,
  idParams,
  readEndpoint,
  viewEndpoint,
} from './views.ts';

const eventTypes = z
  .array(
    z
      .string()
      .regex(
        SUBSCRIPTION_PATTERN,
        'must be a family wildcard like `suppression.*` or an event name like `suppression.added`',
      ),
  )
  .max(50)
  .nullable()
  .optional()
  .describe('Omitted, null or empty: the default set (`email.*` but `email.replied`). Other families must be named.');
const settingsFields = {
  url: z
    .string()
    .max(2048)
    .describe(
      '`https://` to a public address; `http://` and private addresses only where WEBHOOK_ALLOW_PRIVATE is set.',
    ),
  description: z.string().max(500).nullable().optional(),
  eventTypes,
  addressAllowlist,
  domainAllowlist,
};
const withSecret = endpointView.extend({
  secret: z.string().describe('Shown only here: sign-check deliveries with it.'),
});

/** A receiver URL under the deployment's policy, normalised; 422 on `url` otherwise. */
function checkUrl(deps: ApiDeps, url: string): string {
  const checked = deps.webhooks.checkUrl(url);
  if (!checked.ok) throw new ApiError('invalid_parameter', `\`url\`: ${checked.reason}`, 'url', 422);
  return checked.url.toString();
}

export const endpointOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/webhooks',
    operationId: 'listWebhooks',
    summary: 'List webhook endpoints',
    description: 'Scope: `webhooks:read`. Newest first; never the secret.',
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
  }),

  operation({
    method: 'POST',
    url: '/webhooks',
    operationId: 'createWebhook',
    errors: ['workspace_limit_reached'],
    stepUp: true,
    summary: 'Create a webhook endpoint',
    description:
      'Scope: `webhooks:write`. Enabled at once; the signing `secret` is in this answer only. At most 10 endpoints.',
    scope: 'webhooks:write',
    body: z.strictObject(settingsFields),
    status: 201,
    response: withSecret,
    handler: async ({ credential, body, request }) => {
      const settings = {
        url: checkUrl(deps, body.url),
        description: body.description ?? null,
        eventTypes: body.eventTypes ?? null,
        addressAllowlist: body.addressAllowlist ?? null,
        domainAllowlist: body.domainAllowlist ?? null,
      };
      requireWithinLists(credential, settings);
      const { endpointId, secret } = await createWebhookEndpoint(
        deps.commands,
        actorOf(credential, request.id),
        settings,
        new Date().toISOString(),
      );
      return { ...(await readEndpoint(deps.db, credential.workspaceId, endpointId)), secret };
    },
  }),

  operation({
    method: 'GET',
    url: '/webhooks/:id',
    operationId: 'getWebhook',
    errors: ['resource_not_found'],
    summary: 'Read a webhook endpoint',
    scope: 'webhooks:read',
    params: idParams,
    response: endpointView,
    handler: async ({ credential, params }) => readEndpoint(deps.db, credential.workspaceId, params.id),
  }),

  operation({
    method: 'PATCH',
    url: '/webhooks/:id',
    operationId: 'updateWebhook',
    errors: ['resource_not_found'],
    stepUp: true,
    summary: 'Update a webhook endpoint',
    description:
      'Scope: `webhooks:write`. Omitted fields stay. `enabled: false` switches it off (disabledAt and disabledReason stay null); ' +
      '`enabled: true` switches it on and starts the failure count again.',
    scope: 'webhooks:write',
    params: idParams,
    body: z.strictObject({ ...settingsFields, url: settingsFields.url.optional(), enabled: z.boolean().optional() }),
    response: endpointView,
    handler: async ({ credential, params, body, request }) => {
      const row = await endpointWithinLists(deps.db, credential, params.id);
      const settings = {
        ...(body.url !== undefined ? { url: checkUrl(deps, body.url) } : {}),
        ...(body.description !== undefined ? { description: body.description } : {}),
        ...(body.eventTypes !== undefined ? { eventTypes: body.eventTypes } : {}),
        ...(body.addressAllowlist !== undefined ? { addressAllowlist: body.addressAllowlist } : {}),
        ...(body.domainAllowlist !== undefined ? { domainAllowlist: body.domainAllowlist } : {}),
      };
      requireWithinLists(credential, {
        addressAllowlist: settings.addressAllowlist !== undefined ? settings.addressAllowlist : row.address_allowlist,
        domainAllowlist: settings.domainAllowlist !== undefined ? settings.domainAllowlist : row.domain_allowlist,
      });
      await updateWebhookEndpoint(
        deps.commands,
        actorOf(credential, request.id),
        { endpointId: row.id, settings, enabled: body.enabled },
        new Date().toISOString(),
      );
      return readEndpoint(deps.db, credential.workspaceId, row.id);
    },
  }),

  operation({
    method: 'DELETE',
    url: '/webhooks/:id',
    operationId: 'deleteWebhook',
    errors: ['resource_not_found'],
    summary: 'Delete a webhook endpoint',
    description: 'Scope: `webhooks:write`. Its pending deliveries and its delivery log go with it.',
    scope: 'webhooks:write',
    params: idParams,
    response: z.object({ object: z.literal('webhook_endpoint'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinLists(deps.db, credential, params.id);
      await deleteWebhookEndpoint(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { object: 'webhook_endpoint' as const, id: row.id, deleted: true as const };
    },
  }),

  operation({
    method: 'POST',
    url: '/webhooks/:id/rotate-secret',
    operationId: 'rotateWebhookSecret',
    errors: ['resource_not_found'],
    summary: 'Rotate the signing secret',
    description:
      'Scope: `webhooks:write`. The new secret is in this answer only; the previous one keeps signing beside it for 24 hours.',
    scope: 'webhooks:write',
    params: idParams,
    response: withSecret,
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinLists(deps.db, credential, params.id);
      const { secret } = await rotateWebhookSecret(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      return { ...(await readEndpoint(deps.db, credential.workspaceId, row.id)), secret };
    },
  }),

  operation({
    method: 'POST',
    url: '/webhooks/:id/test',
    operationId: 'testWebhook',
    errors: ['resource_not_found', 'webhook_disabled'],
    summary: 'Send a test event',
    description:
      'Scope: `webhooks:write`. Queues one `webhook.test` delivery to this endpoint, whatever it subscribes to; 409 `webhook_disabled` when disabled.',
    scope: 'webhooks:write',
    params: idParams,
    status: 202,
    response: deliveryView,
    handler: async ({ credential, params, request }) => {
      const row = await endpointWithinLists(deps.db, credential, params.id);
      const { position } = await requestWebhookTest(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      return deliveryOf(deps.db, row.id, deliveryIdOf(position!, row.id));
    },
  }),

  operation({
    method: 'POST',
    url: '/webhooks/:id/replay',
    operationId: 'replayWebhookDeliveries',
    errors: ['resource_not_found', 'webhook_disabled'],
    summary: 'Replay failed deliveries',
    description:
      'Scope: `webhooks:write`. Every failed delivery created at or after `since` is sent again; 409 `webhook_disabled` when the endpoint is disabled.',
    scope: 'webhooks:write',
    params: idParams,
    body: z.strictObject({ since: dateTime }),
    status: 202,
    response: z.object({
      object: z.literal('webhook_replay'),
      endpointId: z.string(),
      since: z.string(),
      replayed: z.number().int(),
    }),
    handler: async ({ credential, params, body, request }) => {
      const row = await endpointWithinLists(deps.db, credential, params.id);
      const since = new Date(body.since).toISOString();
      const replayed = await countFailedSince(deps.db, row.id, since);
      await replayWebhookDeliveries(
        deps.commands,
        actorOf(credential, request.id),
        { endpointId: row.id, deliveryIds: null, since },
        new Date().toISOString(),
      );
      return { object: 'webhook_replay' as const, endpointId: row.id, since, replayed };
    },
  }),
];
