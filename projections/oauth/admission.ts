import type pg from 'pg';

/**
 * The OAuth counterpart of the key admission (projections/api-keys/admission.ts), in one round
 * trip: the access token with its approval, what the person holds in the workspace now (role
 * permissions, direct address and domain grants by name, which of them are `viewer` grants), until
 * when the person's step-up elevates the app, and the request counted in its rate-limit window.
 * A token that works is counted under `oauth:<approval id>` (one allowance per app, person and
 * workspace); anything else under the caller's fallback identity. The tables of tokens, approvals
 * and elevations are the authorization server's and step-up's (infra/oauth, infra/step-up); the
 * rest are read models, so a role change or a removal applies to the next request. A person's
 * grants are read once per kind, the viewer ones filtered from the same rows; the owner reaches
 * every address whatever the grants (domain/oauth/authority.ts), so for the owner both reads are skipped.
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
         w.id IS NOT NULL AS workspace_exists, m.user_id IS NOT NULL AS is_member, coalesce(m.is_owner, false) AS is_owner,
         coalesce(r.permissions, '{}') AS role_permissions, e.elevated_until,
         ga.member_addresses, ga.viewer_addresses, gd.member_domains, gd.viewer_domains
  FROM oauth_access_tokens t JOIN oauth_grants g ON g.id = t.grant_id
  LEFT JOIN workspaces w ON w.id = g.workspace_id
  LEFT JOIN memberships m ON m.workspace_id = g.workspace_id AND m.user_id = g.user_id
  LEFT JOIN roles r ON r.id = m.role_id AND r.workspace_id = m.workspace_id
  LEFT JOIN step_up_elevations e ON e.client_id = g.client_id AND e.user_id = g.user_id
  CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(ad.address), '{}') AS member_addresses,
           coalesce(array_agg(ad.address) FILTER (WHERE mg.access = 'viewer'), '{}') AS viewer_addresses
    FROM member_grants mg JOIN addresses ad ON ad.id = mg.target_id AND ad.workspace_id = mg.workspace_id
    WHERE NOT coalesce(m.is_owner, false)
      AND mg.workspace_id = g.workspace_id AND mg.user_id = g.user_id AND mg.kind = 'address') ga
  CROSS JOIN LATERAL (
    SELECT coalesce(array_agg(d.domain), '{}') AS member_domains,
           coalesce(array_agg(d.domain) FILTER (WHERE mg.access = 'viewer'), '{}') AS viewer_domains
    FROM member_grants mg JOIN domains d ON d.id::text = mg.target_id AND d.workspace_id = mg.workspace_id
    WHERE NOT coalesce(m.is_owner, false)
      AND mg.workspace_id = g.workspace_id AND mg.user_id = g.user_id AND mg.kind = 'domain') gd
  WHERE t.token_hash = $1::text
),
hit AS (
  INSERT INTO rate_limit_windows (identity, window_start, count)
  SELECT coalesce(
    (SELECT 'oauth:' || grant_id FROM tok
      WHERE NOT revoked AND NOT expired AND NOT grant_revoked AND workspace_exists AND is_member
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
  workspace_exists: boolean;
  is_member: boolean;
  is_owner: boolean;
  role_permissions: string[];
  /** Step-up elevation of the app for the person (infra/step-up), however long ago it ended. */
  elevated_until: Date | null;
  member_addresses: string[];
  member_domains: string[];
  /** The direct grants with access `viewer`, by name: they block sending (domain/members/sending.ts). */
  viewer_addresses: string[];
  viewer_domains: string[];
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
