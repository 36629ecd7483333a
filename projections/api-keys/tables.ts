import type { Generated } from 'kysely';
import type { NullableTimestamp, Timestamp } from '../projector.ts';

/** The table of the api keys read model (projector.ts). */
export interface ApiKeysTables {
  api_keys: {
    id: string;
    workspace_id: string;
    name: string | null;
    mode: 'live' | 'test';
    scopes: string[];
    role_id: string | null;
    address_allowlist: string[] | null;
    domain_allowlist: string[] | null;
    expires_at: NullableTimestamp;
    secret_hash: string;
    created_at: Timestamp;
    created_by: string | null;
    rotated_at: NullableTimestamp;
    rotation_count: Generated<number>;
    revoked_at: NullableTimestamp;
  };
}
