import type { Access } from '../../domain/members/events.ts';
import type { Timestamp } from '../projector.ts';

/** The tables of the members read model (projector.ts). */
export interface MembersTables {
  /** People, across workspaces. */
  accounts: {
    user_id: string;
    email: string;
    name: string;
    image: string | null;
    created_at: Timestamp;
  };
  /** Explicit memberships, the owner's included (`rank` 0, so the owner lists first). */
  memberships: {
    workspace_id: string;
    user_id: string;
    email: string;
    is_owner: boolean;
    rank: number;
    role_id: string | null;
    created_at: Timestamp;
  };
  /** Direct grants of a member: `kind` address or domain, `target_id` its id. */
  member_grants: {
    workspace_id: string;
    user_id: string;
    kind: 'address' | 'domain';
    target_id: string;
    access: Access;
  };
  /** Invitations not yet accepted (expired ones too, until refreshed). */
  invitations: {
    id: string;
    workspace_id: string;
    email: string;
    role_id: string;
    address_ids: string[];
    domain_ids: string[];
    access: Access;
    nonce: string;
    invited_at: Timestamp;
  };
}
