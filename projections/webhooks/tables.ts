import type { NullableTimestamp, Timestamp } from '../projector.ts';

/** The table of the webhook endpoints read model (projector.ts). */
export interface WebhooksTables {
  webhook_endpoints: {
    id: string;
    workspace_id: string;
    url: string;
    description: string | null;
    event_types: string[] | null;
    address_allowlist: string[] | null;
    domain_allowlist: string[] | null;
    enabled: boolean;
    disabled_at: NullableTimestamp;
    disabled_reason: string | null;
    secret: string;
    previous_secret: string | null;
    previous_secret_expires_at: NullableTimestamp;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
}
