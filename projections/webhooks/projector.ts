import { sql } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { WebhooksTables } from './tables.ts';

/**
 * Webhook endpoints as the API shows them and the delivery worker signs with. The secrets are
 * here because deliveries are signed from them; no route ever selects them after create/rotate.
 * Failure counts and delivery times are the delivery process's (processes/webhooks), not here.
 */
export const webhookEndpointsProjector = defineProjector<WebhooksTables>()({
  name: 'webhook_endpoints',
  version: 1,
  tables: ['webhook_endpoints'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.webhook_endpoints (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      url text NOT NULL,
      description text,
      event_types text[],
      address_allowlist text[],
      domain_allowlist text[],
      enabled boolean NOT NULL,
      disabled_at timestamptz,
      disabled_reason text,
      secret text NOT NULL,
      previous_secret text,
      previous_secret_expires_at timestamptz,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );`,
  indexes: (s) =>
    `CREATE INDEX IF NOT EXISTS webhook_endpoints_workspace ON ${s}.webhook_endpoints (workspace_id, created_at DESC, id DESC);`,
  on: {
    WebhookEndpointCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`INSERT INTO webhook_endpoints (id, workspace_id, url, description, event_types, address_allowlist, domain_allowlist, enabled, secret, created_at, updated_at)
        VALUES (${d.endpointId}, ${workspaceId}, ${d.url}, ${d.description}, ${d.eventTypes}, ${d.addressAllowlist}, ${d.domainAllowlist},
          true, ${d.secret}, ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    WebhookEndpointUpdated: async (db, { data: d }) => {
      await sql`UPDATE webhook_endpoints SET url = ${d.url}, description = ${d.description}, event_types = ${d.eventTypes},
        address_allowlist = ${d.addressAllowlist}, domain_allowlist = ${d.domainAllowlist}, updated_at = ${d.updatedAt} WHERE id = ${d.endpointId}`.execute(
        db,
      );
    },
    WebhookEndpointDisabled: async (db, { data: d }) => {
      // A person's switch-off leaves disabledAt and disabledReason null (spec, States).
      await sql`UPDATE webhook_endpoints SET enabled = false, updated_at = ${d.disabledAt},
        disabled_at = ${d.reason === null ? null : d.disabledAt}, disabled_reason = ${d.reason} WHERE id = ${d.endpointId}`.execute(
        db,
      );
    },
    WebhookEndpointEnabled: async (db, { data: d }) => {
      await sql`UPDATE webhook_endpoints SET enabled = true, disabled_at = NULL, disabled_reason = NULL, updated_at = ${d.enabledAt} WHERE id = ${d.endpointId}`.execute(
        db,
      );
    },
    WebhookSecretRotated: async (db, { data: d }) => {
      await sql`UPDATE webhook_endpoints SET previous_secret = secret, secret = ${d.secret}, previous_secret_expires_at = ${d.previousSecretExpiresAt},
        updated_at = ${d.rotatedAt} WHERE id = ${d.endpointId} AND secret <> ${d.secret}`.execute(db);
    },
    WebhookEndpointDeleted: async (db, { data: d }) => {
      await sql`DELETE FROM webhook_endpoints WHERE id = ${d.endpointId}`.execute(db);
    },
  },
});
