import type { Generated } from 'kysely';
import type { Json, NullableTimestamp, Timestamp } from '../../projections/projector.ts';

/** The tables of webhook dispatch (dispatch.ts): the routes it fans out by, and the state of deliveries. */
export interface DispatchTables {
  webhook_routes: {
    id: string;
    workspace_id: string;
    event_types: string[] | null;
    address_allowlist: string[] | null;
    domain_allowlist: string[] | null;
    enabled: boolean;
  };
  webhook_deliveries: {
    id: string;
    workspace_id: string;
    endpoint_id: string;
    event_type: string;
    message_id: string;
    payload: Json<{ type: string; timestamp: string; data: Record<string, unknown> }>;
    status: 'pending' | 'delivered' | 'failed';
    attempts: Generated<number>;
    next_attempt_at: NullableTimestamp;
    enqueued_at: NullableTimestamp;
    last_attempt_at: NullableTimestamp;
    last_status_code: number | null;
    created_at: Timestamp;
    completed_at: NullableTimestamp;
  };
  webhook_attempts: {
    delivery_id: string;
    attempt: number;
    endpoint_id: string;
    ok: boolean;
    status_code: number | null;
    duration_ms: number;
    error: string | null;
    response_excerpt: string | null;
    at: Timestamp;
  };
  webhook_health: {
    endpoint_id: string;
    consecutive_failures: Generated<number>;
    last_delivery_at: NullableTimestamp;
  };
  webhook_notices: {
    position: number;
    workspace_id: string;
    endpoint_id: string;
    reason: string;
    disabled_at: Timestamp;
    attempts: Generated<number>;
    next_attempt_at: Timestamp;
    enqueued_at: NullableTimestamp;
    last_error: string | null;
    sent_at: NullableTimestamp;
  };
}
