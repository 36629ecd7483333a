import type pg from 'pg';

/** What a key's admission reads of it (`Admission`), its refusal judged at `now` (an SQL expression). */
function keyColumns(now: string): string {
  return `k.id, k.workspace_id, k.mode, k.scopes, k.role_id, k.address_allowlist, k.domain_allowlist,
    CASE WHEN k.revoked_at IS NOT NULL THEN 'revoked_api_key' WHEN k.expires_at <= ${now} THEN 'expired_api_key' END AS refusal,
    CASE WHEN k.role_id IS NOT NULL THEN coalesce(r.permissions, '{}') END AS role_permissions`;
}
const ROLE_OF_KEY = 'LEFT JOIN roles r ON r.id = k.role_id AND r.workspace_id = k.workspace_id';

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
  SELECT ${keyColumns('$4::timestamptz')}
  FROM api_keys k ${ROLE_OF_KEY}
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

/**
 * The same for several requests in one statement: each keeps its own key, secret, clock and
 * fallback ($1–$6 are arrays, in the requests' order), and each is counted in turn, so a key's
 * requests of one statement take consecutive places in its window as they would one by one.
 * A lone request keeps ADMIT: this one costs PostgreSQL 230–250 µs for one request against 100–105.
 */
const ADMIT_MANY = `
WITH _ AS (SELECT set_config('synchronous_commit', 'off', true)),
req AS (
  SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::bigint[]) WITH ORDINALITY
    AS q(key_id, secret_hash, mode, now, fallback, window_start, i)
),
key AS (
  SELECT q.i, ${keyColumns('q.now')}
  FROM req q JOIN api_keys k ON k.id = q.key_id AND k.secret_hash = q.secret_hash AND k.mode = q.mode
  ${ROLE_OF_KEY}
),
counted AS (
  SELECT q.i, w.identity, q.window_start,
         row_number() OVER (PARTITION BY w.identity, q.window_start ORDER BY q.i) AS nth,
         count(*) OVER (PARTITION BY w.identity, q.window_start) AS n
  FROM req q LEFT JOIN key k ON k.i = q.i AND k.refusal IS NULL
  CROSS JOIN LATERAL (SELECT coalesce('key:' || k.id, q.fallback) AS identity) AS w
),
hit AS (
  INSERT INTO rate_limit_windows (identity, window_start, count)
  SELECT identity, window_start, max(n) FROM counted, _ GROUP BY identity, window_start
  -- Rows locked in one order by every statement: two in flight that share keys never deadlock.
  ORDER BY identity, window_start
  ON CONFLICT (identity, window_start) DO UPDATE SET count = rate_limit_windows.count + EXCLUDED.count
  RETURNING identity, window_start, count
)
SELECT (h.count - c.n + c.nth)::int AS count, k.id, k.workspace_id, k.mode, k.scopes, k.role_id,
       k.address_allowlist, k.domain_allowlist, k.refusal, k.role_permissions
FROM counted c JOIN hit h USING (identity, window_start) LEFT JOIN key k ON k.i = c.i
ORDER BY c.i`;

/** Admissions one statement carries at most. */
const ADMISSIONS_PER_STATEMENT = 256;

interface Waiting {
  input: AdmissionInput;
  resolve(admission: Admission): void;
  reject(error: unknown): void;
}

/**
 * Admits requests as the event store appends: while fewer than `inFlight` statements are under
 * way a request's goes out at once, alone; requests arriving meanwhile queue, and the next free
 * statement carries them all (ADMIT_MANY). Under load most requests then share a statement, its
 * round trip and its parse, where each paid one (PostgreSQL's CPU an admission: about 82 µs alone,
 * 60 four at a time, 36 eight, 23 sixteen). Every request still reads its key and counts in its
 * window when its statement runs, after it arrived.
 */
export class KeyAdmissions {
  private readonly queued: Waiting[] = [];
  private running = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly inFlight = 2,
  ) {}

  admit(input: AdmissionInput): Promise<Admission> {
    return new Promise((resolve, reject) => {
      this.queued.push({ input, resolve, reject });
      this.send();
    });
  }

  private send(): void {
    while (this.running < this.inFlight && this.queued.length > 0) {
      const batch = this.queued.splice(0, ADMISSIONS_PER_STATEMENT);
      this.running++;
      this.query(batch.map((w) => w.input))
        .then(
          (rows) => {
            for (const [i, w] of batch.entries()) w.resolve(rows[i]!);
          },
          (error) => {
            for (const w of batch) w.reject(error);
          },
        )
        .finally(() => {
          this.running--;
          this.send();
        });
    }
  }

  private async query(inputs: AdmissionInput[]): Promise<Admission[]> {
    if (inputs.length === 1) {
      const [input] = inputs as [AdmissionInput];
      const { rows } = await this.pool.query<Admission>({ name: 'admit', text: ADMIT, values: values(input) });
      return rows;
    }
    const columns = inputs.map(values);
    const { rows } = await this.pool.query<Admission>({
      name: 'admit_many',
      text: ADMIT_MANY,
      values: columns[0]!.map((_, c) => columns.map((row) => row[c])),
    });
    return rows;
  }
}

const values = ({ key, now, fallbackIdentity, windowStart }: AdmissionInput): unknown[] => [
  key?.id ?? null,
  key?.secretHash ?? null,
  key?.mode ?? null,
  now,
  fallbackIdentity,
  windowStart,
];
