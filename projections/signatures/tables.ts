import type { Timestamp } from '../projector.ts';

/** The tables of the signatures read model (projector.ts). */
export interface SignaturesTables {
  signatures: {
    workspace_id: string;
    id: string;
    /** The stream's owner: an address id, or `catchall-<domain id>`. */
    owner: string;
    /** Lower-case, or `*@<domain>`; byte order (`COLLATE "C"`), as the list sorts. */
    address: string;
    /** The address's domain, for narrowed credentials. */
    domain: string;
    name: string;
    html: string;
    is_default: boolean;
    is_reply_default: boolean;
    created_at: Timestamp;
    updated_at: Timestamp;
  };
  /** Addresses and domains deleted: their signatures go, and a create racing the deletion never shows. */
  signature_gone_owners: {
    owner: string;
  };
}
