import type pg from 'pg';

/**
 * The OAuth counterpart of the key admission (projections/api-keys/admission.ts), in one round
 * trip: the access token with its approval, the person's membership and role permissions now,
 * until when the person's step-up elevates the app, whether the person holds direct address or
 * domain grants, and the request counted in its rate-limit window. A token that works is counted
 * under `oauth:<approval id>` (one allowance per app, person and workspace); anything else under
 * the caller's fallback identity. The tables of tokens, approvals and elevations are the
 * authorization server's and step-up's (infra/oauth, infra/step-up); the rest are read models, so
 * a role change or a removal applies to the next request.
 *
 * Every table a statement names costs each run a lock and an executor node, taken or not, and
 * this statement runs in front of every request: what only some tokens need is read by a second
 * statement for those alone. The grants' names (`memberReach`) only for a person who holds
 * direct grants (the owner's never count: the owner reaches every address); whether the
 * workspace still exists (`workspaceExists`) only when the person is no longer a member, to tell
 * `grant_workspace_gone` from `grant_access_lost` (a membership exists only in a workspace that
 * does).
 *
 * $1 SHA-256 of the token (null: count by the fallback only), $2 now, $3 the fallback identity,
 * $4 the window's start.
 */
const ADMIT = `
WITH _ AS (SELECT set_config('synchronous_commit', 'off', true)),
tok AS (
  SELECT g.id AS grant_id, g.client_id, g.user_id, g.workspace_id, g.scopes, g.address_allowlist, g.domain_allowlist,
         g.expires_at AS grant_expires_at, g.revoked_at IS NOT NULL AS grant_revoked,
         t.revoked_at IS NOT NULL AS revoked, t.expires_at <= $2::timestamptz AS expired,
         m.user_id IS NOT NULL AS is_member, coalesce(m.is_owner, false) AS is_owner,
         coalesce(r.permissions, '{}') AS role_permissions, e.elevated_until,
         NOT coalesce(m.is_owner, false)
           AND EXISTS (SELECT 1 FROM member_grants mg WHERE mg.workspace_id = g.workspace_id AND mg.user_id = g.user_id)
           AS has_grants
  FROM oauth_access_tokens t JOIN oauth_grants g ON g.id = t.grant_id
  LEFT JOIN memberships m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id
  LEFT JOIN roles r ON r.id = m.role_id AND r.workspace_id = m.workspace_id
  LEFT JOIN step_up_elevations e ON e.client_id = g.client_id AND e.user_id = g.user_id
  WHERE t.token_hash = $1::text
),
hit AS (
  INSERT INTO rate_limit_windows (identity, window_start, count)
  SELECT coalesce(
    (SELECT 'oauth:' || grant_id FROM tok
      WHERE NOT revoked AND NOT expired AND NOT grant_revoked AND is_member
        AND (grant_expires_at IS NULL OR grant_expires_at > $2::timestamptz)),
    $3::text), $4::bigint, 1 FROM _
  ON CONFLICT (identity, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
  RETURNING count
)
SELECT hit.count, tok.* FROM hit LEFT JOIN tok ON true`;

export interface TokenAdmission {
  count: number;
  /** Null when no access token has this digest. */
  grant_id: string | null;
  client_id: string;
  user_id: string;
  workspace_id: string;
  scopes: string[];
  address_allowlist: string[] | null;
  domain_allowlist: string[] | null;
  grant_expires_at: Date | null;
  grant_revoked: boolean;
  revoked: boolean;
  expired: boolean;
  is_member: boolean;
  is_owner: boolean;
  role_permissions: string[];
  /** Step-up elevation of the app for the person (infra/step-up), however long ago it ended. */
  elevated_until: Date | null;
  /** Whether the person (not the owner) holds direct address or domain grants: read them with memberReach. */
  has_grants: boolean;
}

export async function admitToken(
  pool: pg.Pool,
  input: { tokenHash: string | null; now: Date; fallbackIdentity: string; windowStart: number },
): Promise<TokenAdmission> {
  const { rows } = await pool.query<TokenAdmission>({
    name: 'admit-oauth',
    text: ADMIT,
    values: [input.tokenHash, input.now, input.fallbackIdentity, input.windowStart],
  });
  return rows[0]!;
}

/** A member's direct grants by name; the `viewer` ones block sending (domain/members/sending.ts). */
export interface MemberReach {
  addresses: string[];
  domains: string[];
  viewerAddresses: string[];
  viewerDomains: string[];
}

const REACH = `
SELECT coalesce(array_agg(name) FILTER (WHERE kind = 'address'), '{}') AS addresses,
       coalesce(array_agg(name) FILTER (WHERE kind = 'domain'), '{}') AS domains,
       coalesce(array_agg(name) FILTER (WHERE kind = 'address' AND access = 'viewer'), '{}') AS "viewerAddresses",
       coalesce(array_agg(name) FILTER (WHERE kind = 'domain' AND access = 'viewer'), '{}') AS "viewerDomains"
FROM (
  SELECT mg.kind, mg.access, coalesce(ad.address, d.domain) AS name
  FROM member_grants mg
  LEFT JOIN addresses ad ON mg.kind = 'address' AND ad.id = mg.target_id AND ad.workspace_id = mg.workspace_id
  LEFT JOIN domains d ON mg.kind = 'domain' AND d.id::text = mg.target_id AND d.workspace_id = mg.workspace_id
  WHERE mg.workspace_id = $1 AND mg.user_id = $2
) grants
WHERE name IS NOT NULL`;

export async function memberReach(pool: pg.Pool, workspaceId: string, userId: string): Promise<MemberReach> {
  const { rows } = await pool.query<MemberReach>({
    name: 'admit-oauth-reach',
    text: REACH,
    values: [workspaceId, userId],
  });
  return rows[0]!;
}

export async function workspaceExists(pool: pg.Pool, workspaceId: string): Promise<boolean> {
  const { rowCount } = await pool.query({
    name: 'admit-oauth-workspace',
    text: 'SELECT 1 FROM workspaces WHERE id = $1',
    values: [workspaceId],
  });
  return rowCount === 1;
}
