import { normaliseAllowlists } from '../shared/allowlists.ts';
import { fail } from '../shared/errors.ts';
import type { WebhookEvent } from './events.ts';
import type { EndpointState, WebhooksState } from './state.ts';

export const ENDPOINTS_MAX = 10;
/** How long a rotated-out secret keeps signing beside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 60 * 60 * 1000;
/** Consecutive failed attempts that switch an endpoint off. */
export const FAILURES_TO_DISABLE = 100;

export interface EndpointSettings {
  url: string;
  description: string | null;
  eventTypes: string[] | null;
  addressAllowlist: string[] | null;
  domainAllowlist: string[] | null;
}

/** Stored forms: an empty subscription is the default set (null), subscriptions deduplicated, allowlists normalised. */
export function normaliseSettings(s: EndpointSettings): EndpointSettings {
  const eventTypes = s.eventTypes === null || s.eventTypes.length === 0 ? null : [...new Set(s.eventTypes)];
  return {
    ...s,
    eventTypes,
    ...normaliseAllowlists({ addressAllowlist: s.addressAllowlist, domainAllowlist: s.domainAllowlist }),
  };
}

function endpointOf(state: WebhooksState, endpointId: string): EndpointState {
  const e = state.endpoints.get(endpointId);
  if (!e) fail('resource_not_found', 'No such webhook endpoint.', 'id');
  return e;
}

export function decideCreateWebhookEndpoint(
  state: WebhooksState,
  cmd: { endpointId: string; settings: EndpointSettings; secret: string; now: string },
): WebhookEvent[] {
  if (state.endpoints.has(cmd.endpointId)) return [];
  if (state.endpoints.size >= ENDPOINTS_MAX)
    fail('workspace_limit_reached', `A workspace has at most ${ENDPOINTS_MAX} webhook endpoints.`);
  return [
    {
      type: 'WebhookEndpointCreated',
      data: { endpointId: cmd.endpointId, ...normaliseSettings(cmd.settings), secret: cmd.secret, createdAt: cmd.now },
    },
  ];
}

/** `enabled` true re-enables (the failure count starts again); false is a person's switch-off, without a reason. */
export function decideUpdateWebhookEndpoint(
  state: WebhooksState,
  cmd: { endpointId: string; settings: Partial<EndpointSettings>; enabled?: boolean; now: string },
): WebhookEvent[] {
  const e = endpointOf(state, cmd.endpointId);
  const events: WebhookEvent[] = [];
  const current: EndpointSettings = {
    url: e.url,
    description: e.description,
    eventTypes: e.eventTypes,
    addressAllowlist: e.addressAllowlist,
    domainAllowlist: e.domainAllowlist,
  };
  const next = normaliseSettings({ ...current, ...cmd.settings });
  if (JSON.stringify(next) !== JSON.stringify(current)) {
    events.push({ type: 'WebhookEndpointUpdated', data: { endpointId: e.endpointId, ...next, updatedAt: cmd.now } });
  }
  if (cmd.enabled === true && !e.enabled)
    events.push({ type: 'WebhookEndpointEnabled', data: { endpointId: e.endpointId, enabledAt: cmd.now } });
  if (cmd.enabled === false && e.enabled)
    events.push({
      type: 'WebhookEndpointDisabled',
      data: { endpointId: e.endpointId, reason: null, disabledAt: cmd.now },
    });
  return events;
}

/** Deliveries switched the endpoint off; a second report of the same kind writes nothing. */
export function decideAutoDisableWebhookEndpoint(
  state: WebhooksState,
  cmd: { endpointId: string; reason: string; now: string },
): WebhookEvent[] {
  const e = state.endpoints.get(cmd.endpointId);
  if (!e?.enabled) return [];
  return [
    { type: 'WebhookEndpointDisabled', data: { endpointId: e.endpointId, reason: cmd.reason, disabledAt: cmd.now } },
  ];
}

export function decideRotateWebhookSecret(
  state: WebhooksState,
  cmd: { endpointId: string; secret: string; now: string },
): WebhookEvent[] {
  const e = endpointOf(state, cmd.endpointId);
  const previousSecretExpiresAt = new Date(Date.parse(cmd.now) + PREVIOUS_SECRET_TTL_MS).toISOString();
  return [
    {
      type: 'WebhookSecretRotated',
      data: { endpointId: e.endpointId, secret: cmd.secret, previousSecretExpiresAt, rotatedAt: cmd.now },
    },
  ];
}

export function decideDeleteWebhookEndpoint(
  state: WebhooksState,
  cmd: { endpointId: string; now: string },
): WebhookEvent[] {
  const e = endpointOf(state, cmd.endpointId);
  return [{ type: 'WebhookEndpointDeleted', data: { endpointId: e.endpointId, deletedAt: cmd.now } }];
}

export function decideTestWebhookEndpoint(
  state: WebhooksState,
  cmd: { endpointId: string; testId: string; now: string },
): WebhookEvent[] {
  const e = endpointOf(state, cmd.endpointId);
  if (!e.enabled) fail('webhook_disabled', 'The endpoint is disabled; enable it first.');
  return [
    { type: 'WebhookTestRequested', data: { endpointId: e.endpointId, testId: cmd.testId, requestedAt: cmd.now } },
  ];
}

export function decideReplayWebhookDeliveries(
  state: WebhooksState,
  cmd: { endpointId: string; deliveryIds: string[] | null; since: string | null; now: string },
): WebhookEvent[] {
  const e = endpointOf(state, cmd.endpointId);
  if (!e.enabled) fail('webhook_disabled', 'The endpoint is disabled; enable it before replaying its deliveries.');
  return [
    {
      type: 'WebhookDeliveriesReplayed',
      data: { endpointId: e.endpointId, deliveryIds: cmd.deliveryIds, since: cmd.since, requestedAt: cmd.now },
    },
  ];
}
