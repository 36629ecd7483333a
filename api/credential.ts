import type { ViewOnly } from '../domain/members/sending.ts';
import type { Permission } from '../domain/shared/permissions.ts';

/**
 * Who is calling, resolved on every request. Two kinds share this shape: API keys now, OAuth
 * access tokens when connected apps land (the resolver picks by token prefix).
 */
export interface Credential {
  kind: 'apiKey' | 'oauth';
  /** Key id; null for OAuth tokens. */
  id: string | null;
  workspaceId: string;
  mode: 'live' | 'test';
  /** What the key was given. */
  grantedScopes: Permission[];
  /** grantedScopes ∩ the role's permissions (or grantedScopes when there is no role). */
  scopes: Permission[];
  roleId: string | null;
  addressAllowlist: string[] | null;
  domainAllowlist: string[] | null;
  clientId?: string;
  expiresAt?: string | null;
  /** OAuth only: the person who connected the app owns the workspace (some changes are the owner's apps' alone). */
  connectedByOwner?: boolean;
  /**
   * The authority behind the credential holds every permission: a key with no role or whose role
   * holds them all; an app connected by the owner or by a member whose role holds them all. Only
   * such a credential may export the workspace.
   */
  holdsEveryPermission?: boolean;
  /** OAuth only: the person whose approval the token stands on. */
  userId?: string;
  /** OAuth only: until when the person's step-up elevation lets this app make sensitive changes. */
  elevatedUntil?: string | null;
  /** OAuth only: the addresses the person's `viewer` grants let it read but not send from. */
  viewOnly?: ViewOnly | null;
}

/**
 * Sensitive operations (the spec's step-up list) need an OAuth token to be elevated; API keys are
 * never asked. Checked before anything changes, so a refused call changed nothing.
 */
export function stepUpRefusal(c: Credential, now: number): string | null {
  if (c.kind !== 'oauth') return null;
  const until = c.elevatedUntil ? Date.parse(c.elevatedUntil) : NaN;
  return until > now
    ? null
    : 'This change needs step-up verification: POST /security/step-up, verify the code, then repeat the call.';
}

/** A credential limited to some addresses or domains. */
export function isNarrowed(c: Credential): boolean {
  return c.addressAllowlist !== null || c.domainAllowlist !== null;
}

/** The actor recorded in the metadata of events a request writes. */
export function actorOf(
  c: Credential,
  requestId: string,
): { workspaceId: string; kind: 'apiKey' | 'oauth'; id: string | null; requestId: string } {
  return { workspaceId: c.workspaceId, kind: c.kind, id: c.kind === 'apiKey' ? c.id : (c.clientId ?? null), requestId };
}
