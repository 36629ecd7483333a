import { domainOf } from '../shared/allowlists.ts';

/**
 * Where a member reads but may not send: a grant with access `viewer` blocks sending from its
 * addresses even when the role holds `emails:send`, unless the role holds `addresses:all` (spec,
 * Member). The most specific grant decides (docs/decisions/members.md): an address's own grant
 * over its domain's, so `except` holds the addresses granted as `member` on a viewer domain.
 */
export interface ViewOnly {
  addresses: string[];
  domains: string[];
  except: string[];
}

/** A member's standing as sending needs it; grants by name. */
export interface MemberGrants {
  isOwner: boolean;
  rolePermissions: readonly string[];
  /** Every address granted directly, whatever its access. */
  addresses: string[];
  /** Those of them, and the domains, granted as `viewer`. */
  viewerAddresses: string[];
  viewerDomains: string[];
}

/** The member's view-only addresses and domains; null when nothing blocks sending. */
export function viewOnlyOf(m: MemberGrants): ViewOnly | null {
  if (m.isOwner || m.rolePermissions.includes('addresses:all')) return null;
  if (m.viewerAddresses.length === 0 && m.viewerDomains.length === 0) return null;
  const lower = (xs: string[]) => [...new Set(xs.map((x) => x.toLowerCase()))];
  const addresses = lower(m.viewerAddresses);
  return {
    addresses,
    domains: lower(m.viewerDomains),
    except: lower(m.addresses).filter((a) => !addresses.includes(a)),
  };
}

/** May a caller limited by `viewOnly` send as `address`? (Reach is checked apart.) */
export function sendsFrom(viewOnly: ViewOnly | null, address: string): boolean {
  if (viewOnly === null) return true;
  const a = address.toLowerCase();
  if (viewOnly.addresses.includes(a)) return false;
  return !viewOnly.domains.includes(domainOf(a)) || viewOnly.except.includes(a);
}
