import type { SendingStatus } from '../../domain/domains/check.ts';
import type { DmarcReport } from '../../domain/domains/dmarc.ts';
import type { CheckedRecordStatus, HostStatus } from '../../domain/domains/events.ts';
import type { DmarcPolicy } from '../../domain/domains/records.ts';
import type { Json, NullableTimestamp, Timestamp } from '../projector.ts';

/** The table of the domains read model (projector.ts). Never a private key: those are in the vault. */
export interface DomainsTables {
  domains: {
    workspace_id: string;
    /** uuid */
    id: string;
    /** Lower-case, IDNs in punycode. */
    domain: string;
    created_at: Timestamp;
    /** The key that signs: its vault id, selector and public half. */
    dkim_key_id: string;
    dkim_selector: string;
    dkim_public_key: string;
    /** A rotated key waiting for its record. */
    pending_dkim_key_id: string | null;
    pending_dkim_selector: string | null;
    pending_dkim_public_key: string | null;
    catch_all: boolean;
    /** The IANA zone the catch-all's rules read `hour` and `weekday` in. */
    catch_all_time_zone: string;
    dmarc_policy: DmarcPolicy | null;
    sender_name: string | null;
    logo: string | null;
    tracking_host: string | null;
    tracking_status: HostStatus;
    tracking_error: string | null;
    storage_host: string | null;
    storage_status: HostStatus;
    storage_error: string | null;
    last_checked_at: NullableTimestamp;
    receiving_verified_at: NullableTimestamp;
    receiving_error: string | null;
    sending_status: SendingStatus;
    sending_error: string | null;
    ever_verified: boolean;
    /** The records as the last check found them (name and value included, so a changed record reads unchecked). */
    checked_records: Json<CheckedRecordStatus[]>;
    dmarc: Json<DmarcReport | null>;
  };
}
