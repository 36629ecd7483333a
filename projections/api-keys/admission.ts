import type pg from 'pg';

/**
 * The one round trip in front of every request (api/plugins/auth.ts): it reads the API key with
 * its role's permissions (so a revocation or a role change applies to the very next request) and
 * counts the request in its rate-limit window (the `rate_limit_windows` table of
 * api/plugins/rate-limit.ts). A key whose id, secret hash and mode all match, unrevoked and
 * unexpired, is counted under `key:<id>`; anything else (no token, a bogus id, a wrong secret, a
 * revoked or expired key) under the caller's fallback identity, so a guessed key id never makes a
 * counter row or spends a real key's allowance. The secret is compared as its SHA-256 digest:
 * timing what PostgreSQL's comparison takes could at most reveal a digest prefix, which does not
 * help find a secret of 256 random bits.
 * The counter table is unlogged and this transaction commits without waiting for the WAL flush,
 * as the counter alone writes. Columns are named, not `k.*`: the statement is prepared once per
 * connection, and a prepared statement must keep its result columns across a rebuild's swap.
 *
 * $1 key id (null: count by the fallback only), $2 SHA-256 of the secret, $3 the token's mode,
 * $4 now, $5 the identity counted when no usable key matches, $6 the window's start.
 */
const ADMIT = `
WITH _ AS (SELECT set_config('synchronous_commit', 'off', true)),
key AS (
  SELECT k.id, k.workspace_id, k.mode, k.scopes, k.role_id, k.address_allowlist, k.domain_allowlist,
         CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked_api_key' WHEN k.expires_at <= $4::timestamptz THEN 'expired_api_key' END AS refusal,
         CASE WHEN k.role_id IS NOT NULL THEN coalesce(r.permissions, '{}') END AS role_permissions
  FROM api_keys k LEFT JOIN roles r ON r.id = k.role_id AND r.workspace_id = k.workspace_id
  WHERE k.id = $1::text AND k.secret_hash = $2::text AND k.mode = $3::text
),
hit AS (
  INSERT INTO rate_limit_windows (identity, window_start, count)
  SELECT coalesce((SELECT 'key:' || id FROM key WHERE refusal IS NULL), $5::text), $6::bigint, 1 FROM _
  ON CONFLICT (identity, window_start) DO UPDATE SET count = rate_limit_windows.count + 1
  RETURNING count
)
SELECT hit.count, key.* FROM hit LEFT JOIN key ON true`;

export interface Admission {
  /** The request's place in its window: the count after this one. */
  count: number;
  /** Null when no key matched id, secret and mode. */
  id: string | null;
  workspace_id: string;
  mode: 'live' | 'test';
  scopes: string[];
  role_id: string | null;
  address_allowlist: string[] | null;
  domain_allowlist: string[] | null;
  refusal: 'revoked_api_key' | 'expired_api_key' | null;
  /** The permissions of the key's role; null when the key has no role. */
  role_permissions: string[] | null;
}

export interface AdmissionInput {
  /** The token's key; null when the request carries none to look up. */
  key: { id: string; secretHash: string; mode: 'live' | 'test' } | null;
  now: Date;
  /** Counted when no usable key matches: `ip:<address>`. */
  fallbackIdentity: string;
  windowStart: number;
}

export async function admitKey(pool: pg.Pool, input: AdmissionInput): Promise<Admission> {
  const { key } = input;
  const { rows } = await pool.query<Admission>({
    name: 'admit',
    text: ADMIT,
    values: [
      key?.id ?? null,
      key?.secretHash ?? null,
      key?.mode ?? null,
      input.now,
      input.fallbackIdentity,
      input.windowStart,
    ],
  });
  return rows[0]!;
}
