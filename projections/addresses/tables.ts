import type { ForwardStatus } from '../../domain/addresses/events.ts';
import type { NullableTimestamp, Timestamp } from '../projector.ts';

/** The tables of the addresses read model (projector.ts). */
export interface AddressesTables {
  addresses: {
    workspace_id: string;
    id: string;
    /** Lower-case, the domain in punycode; byte order (`COLLATE "C"`), as lists sort. */
    address: string;
    local_part: string;
    domain: string;
    domain_id: string;
    enabled: boolean;
    /** The IANA zone its rules' `hour` and `weekday` read (UTC until set). */
    time_zone: string;
    /** A custom login name; null: the address itself. */
    username: string | null;
    /**
     * Written by the address's stream, then registered on the workspace's registry: only
     * registered rows exist for every query (an unregistered one is a create that lost its race,
     * a crash between the two writes, or a delete under way).
     */
    registered: boolean;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  address_forwards: {
    workspace_id: string;
    id: string;
    address_id: string;
    destination: string;
    status: ForwardStatus;
    enabled: boolean;
    keep_copy: boolean;
    /** The nonce of the consent link that works now (domain/addresses/decide.ts). */
    nonce: string | null;
    consent_requested_at: NullableTimestamp;
    answered_at: NullableTimestamp;
    created_at: Timestamp;
    /** The revision of its address's stream it was added at: forwards list in the order they were added. */
    added_revision: number;
  };
  address_app_passwords: {
    workspace_id: string;
    id: string;
    address_id: string;
    name: string;
    /** scrypt (commands/addresses/passwords.ts); no route ever selects it. */
    password_hash: string;
    created_at: Timestamp;
  };
}
