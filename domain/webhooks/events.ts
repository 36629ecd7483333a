import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

const settings = {
  url: z.string(),
  description: z.string().nullable(),
  /** null: the default set (`email.*` but `email.replied`), shown as `['*']`. */
  eventTypes: z.array(z.string()).nullable(),
  addressAllowlist: z.array(z.string()).nullable(),
  domainAllowlist: z.array(z.string()).nullable(),
};

/** `secret` signs deliveries; it is shown once, redacted from the audit replay, never read back by the API. */
export const WebhookEndpointCreated = defineEvent(
  'WebhookEndpointCreated',
  z.object({ endpointId: z.string(), ...settings, secret: z.string(), createdAt: z.string() }),
);

/** The endpoint's settings as they stand after the change. */
export const WebhookEndpointUpdated = defineEvent(
  'WebhookEndpointUpdated',
  z.object({ endpointId: z.string(), ...settings, updatedAt: z.string() }),
);

/** `reason` null: a person switched it off; otherwise why deliveries stopped it. */
export const WebhookEndpointDisabled = defineEvent(
  'WebhookEndpointDisabled',
  z.object({ endpointId: z.string(), reason: z.string().nullable(), disabledAt: z.string() }),
);

export const WebhookEndpointEnabled = defineEvent(
  'WebhookEndpointEnabled',
  z.object({ endpointId: z.string(), enabledAt: z.string() }),
);

/** The previous secret keeps signing beside the new one until `previousSecretExpiresAt`. */
export const WebhookSecretRotated = defineEvent(
  'WebhookSecretRotated',
  z.object({ endpointId: z.string(), secret: z.string(), previousSecretExpiresAt: z.string(), rotatedAt: z.string() }),
);

export const WebhookEndpointDeleted = defineEvent(
  'WebhookEndpointDeleted',
  z.object({ endpointId: z.string(), deletedAt: z.string() }),
);

/** A `webhook.test` delivery to this endpoint only, whatever it subscribes to. */
export const WebhookTestRequested = defineEvent(
  'WebhookTestRequested',
  z.object({ endpointId: z.string(), testId: z.string(), requestedAt: z.string() }),
);

/** Deliveries sent again: the ones named, or every failed one created since `since`. */
export const WebhookDeliveriesReplayed = defineEvent(
  'WebhookDeliveriesReplayed',
  z.object({
    endpointId: z.string(),
    deliveryIds: z.array(z.string()).nullable(),
    since: z.string().nullable(),
    requestedAt: z.string(),
  }),
);

export const webhookEvents = [
  WebhookEndpointCreated,
  WebhookEndpointUpdated,
  WebhookEndpointDisabled,
  WebhookEndpointEnabled,
  WebhookSecretRotated,
  WebhookEndpointDeleted,
  WebhookTestRequested,
  WebhookDeliveriesReplayed,
];
export type WebhookEvent =
  | EventOf<typeof WebhookEndpointCreated>
  | EventOf<typeof WebhookEndpointUpdated>
  | EventOf<typeof WebhookEndpointDisabled>
  | EventOf<typeof WebhookEndpointEnabled>
  | EventOf<typeof WebhookSecretRotated>
  | EventOf<typeof WebhookEndpointDeleted>
  | EventOf<typeof WebhookTestRequested>
  | EventOf<typeof WebhookDeliveriesReplayed>;

/** Every endpoint of a workspace is one aggregate: the 10-endpoint limit is decided on one stream. */
export const webhooksStream = (workspaceId: string) => `ws-${workspaceId}.webhooks`;
