import { sql, type Kysely, type Selectable } from 'kysely';
import {
  covers,
  deliveryIdOf,
  subscribes,
  TEST_EVENT_TYPE,
  WEBHOOK_SOURCE_TYPES,
  webhookMessageOf,
  type WebhookMessage,
  type WebhookSourceType,
} from '../../domain/webhooks/catalogue.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { DispatchTables } from './tables.ts';

type Db = Kysely<DispatchTables>;

/** What changes the routes, or asks for deliveries to one endpoint. */
const CONTROL = [
  'WebhookEndpointCreated',
  'WebhookEndpointUpdated',
  'WebhookEndpointDisabled',
  'WebhookEndpointEnabled',
  'WebhookEndpointDeleted',
  'WebhookTestRequested',
  'WebhookDeliveriesReplayed',
] as const;
type Control = Projected<(typeof CONTROL)[number]>;
type Source = Projected<WebhookSourceType>;

const SOURCES: ReadonlySet<string> = new Set(WEBHOOK_SOURCE_TYPES);
const isSource = (e: Control | Source): e is Source => SOURCES.has(e.type);

type Route = Omit<Selectable<DispatchTables['webhook_routes']>, 'workspace_id' | 'enabled'>;

/**
 * The fan-out half of webhook delivery: follows the event log in order and turns each domain event
 * that maps to a webhook event into one pending delivery per endpoint subscribed to it at that
 * point of the log. It keeps its own copy of the routes (subscriptions and allowlists) so the
 * answer never depends on how far another read model has got. The worker (worker.ts) sends.
 * A switch-off by deliveries leaves a notice owed (`webhook_notices`), which notices.ts mails.
 *
 * It runs under the projection runner (checkpoint in the same transaction, one leader, and
 * read-your-writes for the test and replay requests) but is never rebuilt: its tables are the
 * state of deliveries, and rebuilding from position 0 would send every event again.
 */
export const webhookDispatch = defineReactor<DispatchTables>()({
  name: 'webhook_dispatch',
  version: 1,
  tables: ['webhook_routes', 'webhook_deliveries', 'webhook_attempts', 'webhook_health', 'webhook_notices'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.webhook_routes (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      event_types text[],
      address_allowlist text[],
      domain_allowlist text[],
      enabled boolean NOT NULL
    );
    CREATE INDEX IF NOT EXISTS webhook_routes_workspace ON ${s}.webhook_routes (workspace_id) WHERE enabled;
    CREATE TABLE IF NOT EXISTS ${s}.webhook_deliveries (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      endpoint_id text NOT NULL,
      event_type text NOT NULL,
      message_id text NOT NULL,
      payload jsonb NOT NULL,
      status text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz,
      enqueued_at timestamptz,
      last_attempt_at timestamptz,
      last_status_code integer,
      created_at timestamptz NOT NULL,
      completed_at timestamptz
    );
    CREATE INDEX IF NOT EXISTS webhook_deliveries_due ON ${s}.webhook_deliveries (next_attempt_at) WHERE status = 'pending';
    CREATE INDEX IF NOT EXISTS webhook_deliveries_endpoint ON ${s}.webhook_deliveries (endpoint_id, created_at DESC, id DESC);
    CREATE TABLE IF NOT EXISTS ${s}.webhook_attempts (
      delivery_id text NOT NULL,
      attempt integer NOT NULL,
      endpoint_id text NOT NULL,
      ok boolean NOT NULL,
      status_code integer,
      duration_ms integer NOT NULL,
      error text,
      response_excerpt text,
      at timestamptz NOT NULL,
      PRIMARY KEY (delivery_id, attempt)
    );
    CREATE INDEX IF NOT EXISTS webhook_attempts_endpoint ON ${s}.webhook_attempts (endpoint_id, at);
    CREATE TABLE IF NOT EXISTS ${s}.webhook_health (
      endpoint_id text PRIMARY KEY,
      consecutive_failures integer NOT NULL DEFAULT 0,
      last_delivery_at timestamptz
    );
    CREATE TABLE IF NOT EXISTS ${s}.webhook_notices (
      position bigint PRIMARY KEY,
      workspace_id text NOT NULL,
      endpoint_id text NOT NULL,
      reason text NOT NULL,
      disabled_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      last_error text,
      sent_at timestamptz
    );
    CREATE INDEX IF NOT EXISTS webhook_notices_due ON ${s}.webhook_notices (next_attempt_at) WHERE sent_at IS NULL;`,
  reactsTo: [...CONTROL, ...WEBHOOK_SOURCE_TYPES],
  // Deliveries are sent in their own time: a write of a source event (a suppression, a contact)
  // answers once its own read models hold it, not once its deliveries are queued. The endpoints'
  // changes, tests and replays are read back at once (the test's delivery, a switched-off route).
  awaitedFor: CONTROL,
  react: dispatch,
  // Most events are of workspaces without an endpoint: such a batch needs no transaction.
  quiet: async (db, events) =>
    events.every(isSource) &&
    [...(await routesOf(db, [...new Set(events.map((e) => e.metadata.workspaceId))])).values()].every(
      (routes) => routes.length === 0,
    ),
});

async function dispatch(db: Db, events: (Control | Source)[]): Promise<void> {
  // Routes of every workspace the batch maps events for are read in one query; an endpoint event
  // drops its workspace's routes, which are then read again after it.
  const routes = await routesOf(db, [...new Set(events.filter(isSource).map((e) => e.metadata.workspaceId))]);
  const pending: Delivery[] = [];
  for (const event of events) {
    const { workspaceId } = event.metadata;
    if (isSource(event)) {
      if (!routes.has(workspaceId)) routes.set(workspaceId, (await routesOf(db, [workspaceId])).get(workspaceId)!);
      const message = webhookMessageOf(event, event.recordedAt.toISOString())!;
      for (const route of routes.get(workspaceId)!) {
        if (
          subscribes(route.event_types, message.type) &&
          covers(
            { addressAllowlist: route.address_allowlist, domainAllowlist: route.domain_allowlist },
            message.concerns,
          )
        ) {
          pending.push(delivery(event, route.id, message));
        }
      }
      continue;
    }
    await insertDeliveries(db, pending.splice(0));
    routes.delete(workspaceId);
    await applyControl(db, event);
  }
  await insertDeliveries(db, pending);
}

interface Delivery {
  id: string;
  workspaceId: string;
  endpointId: string;
  type: string;
  payload: string;
  createdAt: string;
}

/** The body receivers get: Standard Webhooks' `{type, timestamp, data}`. */
function delivery(
  event: Control | Source,
  endpointId: string,
  message: Pick<WebhookMessage, 'type' | 'data'>,
): Delivery {
  const createdAt = event.recordedAt.toISOString();
  return {
    id: deliveryIdOf(event.position, endpointId),
    workspaceId: event.metadata.workspaceId,
    endpointId,
    type: message.type,
    payload: JSON.stringify({ type: message.type, timestamp: createdAt, data: message.data }),
    createdAt,
  };
}

/** The enabled routes of each workspace asked for (an empty list for one without any). */
async function routesOf(db: Db, workspaceIds: string[]): Promise<Map<string, Route[]>> {
  const byWorkspace = new Map<string, Route[]>(workspaceIds.map((w) => [w, []]));
  if (workspaceIds.length === 0) return byWorkspace;
  const { rows } = await sql<
    Route & { workspace_id: string }
  >`SELECT workspace_id, id, event_types, address_allowlist, domain_allowlist
    FROM webhook_routes WHERE workspace_id = ANY(${workspaceIds}::text[]) AND enabled ORDER BY workspace_id, id`.execute(
    db,
  );
  for (const { workspace_id, ...route } of rows) byWorkspace.get(workspace_id)!.push(route);
  return byWorkspace;
}

async function insertDeliveries(db: Db, rows: Delivery[]): Promise<void> {
  if (rows.length === 0) return;
  const col = <K extends keyof Delivery>(k: K) => rows.map((r) => r[k]);
  // The message id is the delivery id: it stays the same across retries, so receivers can de-duplicate.
  await sql`INSERT INTO webhook_deliveries (id, workspace_id, endpoint_id, event_type, message_id, payload, status, next_attempt_at, created_at)
    SELECT id, ws, ep, type, 'msg_' || substr(id, 5), payload::jsonb, 'pending', created, created
    FROM unnest(${col('id')}::text[], ${col('workspaceId')}::text[], ${col('endpointId')}::text[], ${col('type')}::text[],
                ${col('payload')}::text[], ${col('createdAt')}::timestamptz[]) AS t(id, ws, ep, type, payload, created)
    ON CONFLICT (id) DO NOTHING`.execute(db);
}

async function applyControl(db: Db, event: Control): Promise<void> {
  const { workspaceId } = event.metadata;
  switch (event.type) {
    case 'WebhookEndpointCreated': {
      const d = event.data;
      await sql`INSERT INTO webhook_routes (id, workspace_id, event_types, address_allowlist, domain_allowlist, enabled)
        VALUES (${d.endpointId}, ${workspaceId}, ${d.eventTypes}, ${d.addressAllowlist}, ${d.domainAllowlist}, true) ON CONFLICT (id) DO NOTHING`.execute(
        db,
      );
      await sql`INSERT INTO webhook_health (endpoint_id) VALUES (${d.endpointId}) ON CONFLICT DO NOTHING`.execute(db);
      return;
    }
    case 'WebhookEndpointUpdated': {
      const d = event.data;
      await sql`UPDATE webhook_routes SET event_types = ${d.eventTypes}, address_allowlist = ${d.addressAllowlist}, domain_allowlist = ${d.domainAllowlist}
        WHERE id = ${d.endpointId}`.execute(db);
      return;
    }
    case 'WebhookEndpointDisabled': {
      const d = event.data;
      await sql`UPDATE webhook_routes SET enabled = false WHERE id = ${d.endpointId}`.execute(db);
      // Deliveries switched it off: the notice is owed from here on, and sent by notices.ts until it goes out.
      if (d.reason !== null) {
        await sql`INSERT INTO webhook_notices (position, workspace_id, endpoint_id, reason, disabled_at, next_attempt_at)
          VALUES (${event.position}, ${workspaceId}, ${d.endpointId}, ${d.reason}, ${d.disabledAt}, now()) ON CONFLICT DO NOTHING`.execute(
          db,
        );
      }
      return;
    }
    case 'WebhookEndpointEnabled': {
      const d = event.data;
      // Re-enabling starts the failure count again (spec, States).
      await sql`UPDATE webhook_routes SET enabled = true WHERE id = ${d.endpointId}`.execute(db);
      await sql`UPDATE webhook_health SET consecutive_failures = 0 WHERE endpoint_id = ${d.endpointId}`.execute(db);
      return;
    }
    case 'WebhookEndpointDeleted': {
      const d = event.data;
      await sql`DELETE FROM webhook_routes WHERE id = ${d.endpointId}`.execute(db);
      await sql`DELETE FROM webhook_attempts WHERE endpoint_id = ${d.endpointId}`.execute(db);
      await sql`DELETE FROM webhook_deliveries WHERE endpoint_id = ${d.endpointId}`.execute(db);
      await sql`DELETE FROM webhook_health WHERE endpoint_id = ${d.endpointId}`.execute(db);
      // Whoever deleted it has acted on it; a notice not yet sent would point at nothing.
      await sql`DELETE FROM webhook_notices WHERE endpoint_id = ${d.endpointId} AND sent_at IS NULL`.execute(db);
      return;
    }
    case 'WebhookTestRequested': {
      const d = event.data;
      await insertDeliveries(db, [
        delivery(event, d.endpointId, {
          type: TEST_EVENT_TYPE,
          data: { endpointId: d.endpointId, testId: d.testId, requestedAt: d.requestedAt },
        }),
      ]);
      return;
    }
    case 'WebhookDeliveriesReplayed': {
      const d = event.data;
      await sql`UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = ${d.requestedAt}, enqueued_at = NULL, completed_at = NULL
        WHERE endpoint_id = ${d.endpointId}
          AND ${d.deliveryIds === null ? sql`status = 'failed' AND created_at >= ${d.since}` : sql`id = ANY(${d.deliveryIds})`}`.execute(
        db,
      );
      return;
    }
  }
}
