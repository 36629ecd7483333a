import { type Allowlists, domainOf, isUnrestricted, normaliseAllowlists } from '../shared/allowlists.ts';
import { CONSOLE_ONLY, expandPermissions, isPermission, type Permission } from '../shared/permissions.ts';

/** Access tokens start `wmo_at_`, refresh tokens `wmo_rt_`: the resolver tells them from API keys by it. */
export const ACCESS_TOKEN_PREFIX = 'wmo_at_';
export const REFRESH_TOKEN_PREFIX = 'wmo_rt_';

/** An access token works an hour; the app renews it with its refresh token (docs/decisions/oauth.md). */
export const ACCESS_TOKEN_TTL_S = 3600;
/** A refresh token works 30 days and once: each use hands out a new one. */
export const REFRESH_TOKEN_TTL_S = 30 * 86_400;
/** An authorization code works a minute, once. */
export const CODE_TTL_S = 60;
/** A person's approval of an app in a workspace lasts 90 days from the consent; connecting again renews it. */
export const APPROVAL_TTL_MS = 90 * 86_400_000;

/**
 * The scopes an app asks for (`scope`, space separated): permissions a token may hold, implied
 * ones added. A console-only permission, an unknown word or nothing at all is refused.
 */
export function requestedScopes(scope: string | undefined): { scopes: Permission[] } | { refused: string } {
  const words = (scope ?? '').split(' ').filter((w) => w !== '');
  if (words.length === 0) return { refused: 'Name at least one scope.' };
  for (const w of words) {
    if (!isPermission(w)) return { refused: `${w} is not a scope of this service.` };
    if (CONSOLE_ONLY.has(w)) return { refused: `${w} is kept for the console; no app can hold it.` };
  }
  return { scopes: expandPermissions(words as Permission[]) };
}

/** What a member reaches now: the owner and `addresses:all` everything, others their grants. */
export interface MemberReach {
  isOwner: boolean;
  /** The permissions of the member's role (empty when the role has gone). */
  rolePermissions: string[];
  /** Addresses and domains granted to the member directly, by name. */
  addresses: string[];
  domains: string[];
}

export interface Approval extends Allowlists {
  scopes: Permission[];
}

/**
 * A token's authority on this request: the approved scopes within the person's current
 * permissions (never a console-only one), and the approved addresses and domains within what the
 * person reaches now. Both sides are read on every request, so a role change or a revoked grant
 * narrows the token at once.
 */
export function tokenAuthority(approval: Approval, member: MemberReach): Approval {
  const held = new Set(member.rolePermissions);
  const scopes = approval.scopes.filter((s) => !CONSOLE_ONLY.has(s) && (member.isOwner || held.has(s)));
  const reachesAll = member.isOwner || held.has('addresses:all');
  const reach: Allowlists = reachesAll
    ? { addressAllowlist: null, domainAllowlist: null }
    : normaliseAllowlists({ addressAllowlist: member.addresses, domainAllowlist: member.domains });
  return { scopes, ...intersect(normaliseAllowlists(approval), reach) };
}

/** The addresses and domains both lists reach. */
export function intersect(a: Allowlists, b: Allowlists): Allowlists {
  if (isUnrestricted(a)) return b;
  if (isUnrestricted(b)) return a;
  const reaches = (l: Allowlists, address: string) =>
    (l.addressAllowlist ?? []).includes(address) || (l.domainAllowlist ?? []).includes(domainOf(address));
  const bDomains = new Set(b.domainAllowlist ?? []);
  const domainAllowlist = (a.domainAllowlist ?? []).filter((d) => bDomains.has(d));
  const addressAllowlist = [
    ...(a.addressAllowlist ?? []).filter((x) => reaches(b, x)),
    ...(b.addressAllowlist ?? []).filter((x) => reaches(a, x)),
  ];
  return normaliseAllowlists({ addressAllowlist, domainAllowlist });
}

/**
 * Why a token whose approval no longer stands is refused; the app must connect again. Checked
 * before the token's own expiry: renewing would not help.
 */
export type GrantRefusal = 'grant_required' | 'grant_expired' | 'grant_workspace_gone' | 'grant_access_lost';

export function grantRefusal(
  g: { revoked: boolean; expiresAt: Date | null; workspaceExists: boolean; isMember: boolean },
  now: Date,
): GrantRefusal | null {
  if (g.revoked) return 'grant_required';
  if (!g.workspaceExists) return 'grant_workspace_gone';
  if (!g.isMember) return 'grant_access_lost';
  if (g.expiresAt !== null && g.expiresAt <= now) return 'grant_expired';
  return null;
}
