import type { NullableTimestamp, Timestamp } from '../projector.ts';

/** The tables of the accounts read model (projector.ts): what a person's own pages read. */
export interface AccountsTables {
  /** Sessions of our pages; a cookie opens one that is neither signed out nor expired. */
  account_sessions: {
    session_id: string;
    user_id: string;
    signed_in_at: Timestamp;
    expires_at: Timestamp;
    signed_out_at: NullableTimestamp;
  };
  /** Accounts with two-factor on. */
  account_two_factor: {
    user_id: string;
    enabled_at: Timestamp;
    backup_codes: number;
    /** The places of the backup codes spent. */
    backup_codes_used: number[];
  };
}
