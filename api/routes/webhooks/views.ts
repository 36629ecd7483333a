import type { Kysely } from 'kysely';
import type { ReadModels } from '../../../projections/tables.ts';
import { z } from 'zod';
import { idPatterns } from '../../../domain/shared/ids.ts';
import type { AuditEntry } from '../../../projections/webhooks/audit.ts';
import {
  attemptsOf,
  findDelivery,
  findWebhookEndpoint,
  type AttemptRow,
  type DeliveryRow,
  type WebhookEndpointRow,
} from '../../../projections/webhooks/queries.ts';
import type { Credential } from '../../credential.ts';
import { lookup } from '../../lookups.ts';
import { requireWithinLists } from '../../narrowing.ts';

export const idParams = z.object({ id: z.string() });
export const deliveryParams = z.object({ id: z.string(), deliveryId: z.string() });

export const endpointView = z.object({
  object: z.literal('webhook_endpoint'),
  id: z.string(),
  url: z.string(),
  description: z.string().nullable(),
  eventTypes: z.array(z.string()).describe("`['*']` for the default set (every `email.*` event but `email.replied`)."),
  enabled: z.boolean(),
  disabledAt: z.string().nullable(),
  disabledReason: z
    .string()
    .nullable()
    .describe('`consecutive_failures` or `gone` when deliveries switched it off; null when a person did.'),
  consecutiveFailures: z.number().int(),
  addressAllowlist: z.array(z.string()).nullable(),
  domainAllowlist: z.array(z.string()).nullable(),
  lastDeliveryAt: z.string().nullable(),
  previousSecretExpiresAt: z.string().nullable(),
  createdAt: z.string(),
});

const iso = (d: Date | null) => d?.toISOString() ?? null;

export function viewEndpoint(r: WebhookEndpointRow): z.infer<typeof endpointView> {
  const expires =
    r.previous_secret_expires_at && r.previous_secret_expires_at.getTime() > Date.now()
      ? r.previous_secret_expires_at
      : null;
  return {
    object: 'webhook_endpoint',
    id: r.id,
    url: r.url,
    description: r.description,
    eventTypes: r.event_types ?? ['*'],
    enabled: r.enabled,
    disabledAt: iso(r.disabled_at),
    disabledReason: r.disabled_reason,
    consecutiveFailures: Number(r.consecutive_failures),
    addressAllowlist: r.address_allowlist,
    domainAllowlist: r.domain_allowlist,
    lastDeliveryAt: iso(r.last_delivery_at),
    previousSecretExpiresAt: iso(expires),
    createdAt: r.created_at.toISOString(),
  };
}

const attemptView = z.object({
  attempt: z.number().int(),
  ok: z.boolean(),
  statusCode: z.number().int().nullable(),
  durationMs: z.number().int(),
  error: z.string().nullable(),
  responseExcerpt: z.string().nullable().describe('The first 1,024 bytes of the answer.'),
  at: z.string(),
});

export const deliveryView = z.object({
  object: z.literal('webhook_delivery'),
  id: z.string(),
  endpointId: z.string(),
  eventType: z.string(),
  messageId: z.string().describe('The `webhook-id` header: the same for every attempt.'),
  status: z.enum(['pending', 'delivered', 'failed']),
  nextAttemptAt: z.string().nullable(),
  lastStatusCode: z.number().int().nullable(),
  attempts: z.array(attemptView),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
});

export function viewDelivery(d: DeliveryRow, attempts: AttemptRow[]): z.infer<typeof deliveryView> {
  return {
    object: 'webhook_delivery',
    id: d.id,
    endpointId: d.endpoint_id,
    eventType: d.event_type,
    messageId: d.message_id,
    status: d.status,
    nextAttemptAt: d.status === 'pending' ? iso(d.next_attempt_at) : null,
    lastStatusCode: d.last_status_code,
    attempts: attempts.map((a) => ({
      attempt: a.attempt,
      ok: a.ok,
      statusCode: a.status_code,
      durationMs: a.duration_ms,
      error: a.error,
      responseExcerpt: a.response_excerpt,
      at: a.at.toISOString(),
    })),
    createdAt: d.created_at.toISOString(),
    completedAt: iso(d.completed_at),
  };
}

export const auditEntryView = z.object({
  object: z.literal('webhook_audit_entry'),
  type: z.string(),
  at: z.string(),
  actor: z.unknown(),
  requestId: z.string().nullable(),
  data: z.record(z.string(), z.unknown()),
});

export const viewAuditEntry = ({ revision: _r, ...e }: AuditEntry): z.infer<typeof auditEntryView> => ({
  object: 'webhook_audit_entry',
  ...e,
});

export const endpointOr404 = lookup(findWebhookEndpoint, {
  code: 'resource_not_found',
  message: 'No such webhook endpoint.',
  param: 'id',
  pattern: idPatterns.webhookEndpoint,
});
export const deliveryOr404 = lookup(findDelivery, {
  code: 'resource_not_found',
  message: 'No such delivery of this endpoint.',
  param: 'deliveryId',
});

export const readEndpoint = async (db: Kysely<ReadModels>, workspaceId: string, id: string) =>
  viewEndpoint(await endpointOr404(db, workspaceId, id));

/** An endpoint a change reaches: a narrowed credential changes, tests and replays only those inside its own lists. */
export async function endpointWithinLists(
  db: Kysely<ReadModels>,
  credential: Credential,
  id: string,
): Promise<WebhookEndpointRow> {
  const row = await endpointOr404(db, credential.workspaceId, id);
  requireWithinLists(credential, { addressAllowlist: row.address_allowlist, domainAllowlist: row.domain_allowlist });
  return row;
}

/** One delivery of an endpoint, with its attempts. */
export async function deliveryOf(
  db: Kysely<ReadModels>,
  endpointId: string,
  deliveryId: string,
): Promise<z.infer<typeof deliveryView>> {
  const d = await deliveryOr404(db, endpointId, deliveryId);
  return viewDelivery(d, (await attemptsOf(db, [d.id])).get(d.id) ?? []);
}
