import { sql, type Kysely, type Selectable } from 'kysely';
import type { WebhooksTables } from './tables.ts';
import type { ReadModels } from '../tables.ts';

/** Also reads the tables of webhook dispatch (processes/webhooks/dispatch.ts), in raw SQL. */
type Db = Kysely<ReadModels>;

/** An endpoint without its secrets, with its delivery health (dispatch's `webhook_health`). */
export type WebhookEndpointRow = Omit<
  Selectable<WebhooksTables['webhook_endpoints']>,
  'secret' | 'previous_secret' | 'updated_at'
> & {
  consecutive_failures: number;
  last_delivery_at: Date | null;
};

/** Never the secrets: reads of an endpoint do not show them. */
const ENDPOINT = sql`e.id, e.workspace_id, e.url, e.description, e.event_types, e.address_allowlist, e.domain_allowlist, e.enabled,
  e.disabled_at, e.disabled_reason, e.previous_secret_expires_at, e.created_at,
  coalesce(h.consecutive_failures, 0) AS consecutive_failures, h.last_delivery_at`;

export async function findWebhookEndpoint(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<WebhookEndpointRow | undefined> {
  const { rows } =
    await sql<WebhookEndpointRow>`SELECT ${ENDPOINT} FROM webhook_endpoints e LEFT JOIN webhook_health h ON h.endpoint_id = e.id
    WHERE e.workspace_id = ${workspaceId} AND e.id = ${id}`.execute(db);
  return rows[0];
}

/** Newest first, after the cursor's (createdAt, id). */
export async function listWebhookEndpoints(
  db: Db,
  workspaceId: string,
  limit: number,
  after: [string, string] | null,
): Promise<WebhookEndpointRow[]> {
  const { rows } =
    await sql<WebhookEndpointRow>`SELECT ${ENDPOINT} FROM webhook_endpoints e LEFT JOIN webhook_health h ON h.endpoint_id = e.id
    WHERE e.workspace_id = ${workspaceId} ${after ? sql`AND (e.created_at, e.id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY e.created_at DESC, e.id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

export interface DeliveryRow {
  id: string;
  endpoint_id: string;
  event_type: string;
  message_id: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: number;
  next_attempt_at: Date | null;
  last_attempt_at: Date | null;
  last_status_code: number | null;
  created_at: Date;
  completed_at: Date | null;
}

export interface AttemptRow {
  delivery_id: string;
  attempt: number;
  ok: boolean;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  response_excerpt: string | null;
  at: Date;
}

const DELIVERY = sql`id, endpoint_id, event_type, message_id, status, attempts, next_attempt_at, last_attempt_at, last_status_code, created_at, completed_at`;

export async function listDeliveries(
  db: Db,
  endpointId: string,
  filter: { status?: string },
  limit: number,
  after: [string, string] | null,
): Promise<DeliveryRow[]> {
  const { rows } = await sql<DeliveryRow>`SELECT ${DELIVERY} FROM webhook_deliveries WHERE endpoint_id = ${endpointId}
    ${filter.status ? sql`AND status = ${filter.status}` : sql``}
    ${after ? sql`AND (created_at, id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

export async function findDelivery(db: Db, endpointId: string, id: string): Promise<DeliveryRow | undefined> {
  const { rows } =
    await sql<DeliveryRow>`SELECT ${DELIVERY} FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND id = ${id}`.execute(
      db,
    );
  return rows[0];
}

export async function attemptsOf(db: Db, deliveryIds: string[]): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>();
  if (deliveryIds.length === 0) return byDelivery;
  const { rows } =
    await sql<AttemptRow>`SELECT delivery_id, attempt, ok, status_code, duration_ms, error, response_excerpt, at
    FROM webhook_attempts WHERE delivery_id = ANY(${deliveryIds}) ORDER BY delivery_id, attempt`.execute(db);
  for (const r of rows) byDelivery.set(r.delivery_id, [...(byDelivery.get(r.delivery_id) ?? []), r]);
  return byDelivery;
}

export async function countFailedSince(db: Db, endpointId: string, since: string): Promise<number> {
  const { rows } = await sql<{
    n: string;
  }>`SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND status = 'failed' AND created_at >= ${since}`.execute(
    db,
  );
  return Number(rows[0]!.n);
}

export interface DeliveryStats {
  deliveries: { pending: number; delivered: number; failed: number };
  attempts: { total: number; succeeded: number; failed: number };
  durationMs: { p50: number | null; p95: number | null };
}

export async function deliveryStats(db: Db, endpointId: string, since: string): Promise<DeliveryStats> {
  const [deliveries, attempts] = await Promise.all([
    sql<{
      status: string;
      n: string;
    }>`SELECT status, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ${endpointId} AND created_at >= ${since} GROUP BY status`.execute(
      db,
    ),
    sql<{
      total: string;
      ok: string;
      p50: number | null;
      p95: number | null;
    }>`SELECT count(*) AS total, count(*) FILTER (WHERE ok) AS ok,
      percentile_disc(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50, percentile_disc(0.95) WITHIN GROUP (ORDER BY duration_ms) AS p95
      FROM webhook_attempts WHERE endpoint_id = ${endpointId} AND at >= ${since}`.execute(db),
  ]);
  const by = new Map(deliveries.rows.map((r) => [r.status, Number(r.n)]));
  const a = attempts.rows[0]!;
  return {
    deliveries: { pending: by.get('pending') ?? 0, delivered: by.get('delivered') ?? 0, failed: by.get('failed') ?? 0 },
    attempts: { total: Number(a.total), succeeded: Number(a.ok), failed: Number(a.total) - Number(a.ok) },
    durationMs: { p50: a.p50, p95: a.p95 },
  };
}
