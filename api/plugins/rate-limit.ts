import type pg from 'pg';
import type { Allowance } from '../../commands/contact-events/record.ts';
import { ApiError } from '../errors/api-error.ts';

export const RATE_LIMIT = 600;
const WINDOW_MS = 60_000;

/**
 * Counts live in PostgreSQL so every server process sharing the database shares the count. The
 * table is unlogged and the update commits asynchronously: a lost count after a crash costs
 * nothing, and a hot key's row lock is then held for microseconds, not for an fsync.
 */
export const RATE_LIMIT_SCHEMA = `
CREATE UNLOGGED TABLE IF NOT EXISTS rate_limit_windows (
  identity text NOT NULL,
  window_start bigint NOT NULL,
  count integer NOT NULL,
  PRIMARY KEY (identity, window_start)
);`;

export interface RateLimitState {
  limit: number;
  remaining: number;
  resetSeconds: number;
  exceeded: boolean;
}

/** The fixed window a request counts in: it starts on the clock minute. */
export interface RateLimitWindow {
  now: number;
  start: number;
  resetSeconds: number;
}

function windowAt(now: number): RateLimitWindow {
  const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
  return { now, start, resetSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)) };
}

/**
 * The windows and their bookkeeping. The count itself is taken by the statement that also resolves
 * the credential (projections/api-keys/admission.ts), so a request pays one round trip for both.
 */
export class RateLimiter implements Allowance {
  private lastPurge = 0;

  constructor(
    private readonly pool: pg.Pool,
    private readonly now: () => number = Date.now,
  ) {}

  /** The window a request arriving now counts in; windows over a minute old are purged, at most once a minute. */
  window(): RateLimitWindow {
    const window = windowAt(this.now());
    if (window.now - this.lastPurge > WINDOW_MS) {
      this.lastPurge = window.now;
      void this.pool
        .query('DELETE FROM rate_limit_windows WHERE window_start < $1', [window.start - WINDOW_MS])
        .catch(() => {});
    }
    return window;
  }

  /**
   * An allowance counted in units (contact events: a batch counts as its size) under an identity
   * of its own (`events:<keyId>`), in the same windows. A take that would pass `limit` takes
   * nothing and is refused, so a refused batch leaves the allowance for smaller ones.
   */
  async take(
    identity: string,
    units: number,
    limit: number,
    now: number = this.now(),
  ): Promise<{ ok: boolean; remaining: number; resetSeconds: number }> {
    const { start, resetSeconds } = windowAt(now);
    const { rows } = await this.pool.query(
      `WITH _ AS (SELECT set_config('synchronous_commit', 'off', true))
       INSERT INTO rate_limit_windows (identity, window_start, count) SELECT $1, $2, $3::int FROM _ WHERE $3::int <= $4::int
       ON CONFLICT (identity, window_start) DO UPDATE SET count = rate_limit_windows.count + $3::int
         WHERE rate_limit_windows.count + $3::int <= $4::int
       RETURNING count`,
      [identity, start, units, limit],
    );
    if (rows[0]) return { ok: true, remaining: limit - rows[0].count, resetSeconds };
    return { ok: false, remaining: 0, resetSeconds };
  }
}

/** Where a request stands once it is counted as the `count`th of its window. */
export function rateLimitState(count: number, window: RateLimitWindow): RateLimitState {
  return {
    limit: RATE_LIMIT,
    remaining: Math.max(0, RATE_LIMIT - count),
    resetSeconds: window.resetSeconds,
    exceeded: count > RATE_LIMIT,
  };
}

export function rateLimitHeaders(state: RateLimitState): Record<string, string> {
  return {
    'RateLimit-Policy': `${state.limit};w=60`,
    'RateLimit-Limit': String(state.limit),
    'RateLimit-Remaining': String(state.remaining),
    'RateLimit-Reset': String(state.resetSeconds),
  };
}

export function rateLimited(state: RateLimitState): ApiError {
  return new ApiError('rate_limited', `At most ${state.limit} requests per minute per credential.`, null, 429, {
    'Retry-After': String(state.resetSeconds),
  });
}
