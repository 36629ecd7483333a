/**
 * When a deferred recipient is tried again. The first attempt is made at acceptance; after the
 * n-th failed attempt the next waits RETRY_DELAYS_MS[n-1], then RETRY_INTERVAL_MS each time,
 * counted from the failure. Nothing is tried past DELIVERY_LIFETIME_MS after acceptance: a retry
 * that would fall later is moved to that moment, and a failure at or after it expires the
 * recipient (it bounces). Source and reasons: docs/decisions/sending.md.
 */

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

export const RETRY_DELAYS_MS: readonly number[] = [
  1 * MINUTE,
  5 * MINUTE,
  15 * MINUTE,
  30 * MINUTE,
  1 * HOUR,
  2 * HOUR,
];
export const RETRY_INTERVAL_MS = 4 * HOUR;
export const DELIVERY_LIFETIME_MS = 72 * HOUR;

export type RetryDecision =
  /** Try again at `at` (ISO instant). */
  | { kind: 'retry'; at: string }
  /** Give up: the recipient bounces as expired (RFC 3463 4.4.7, "delivery time expired"). */
  | { kind: 'expire' };

export const EXPIRED_ENHANCED_CODE = '4.4.7';

export interface FailedAttempt {
  /** When the message was accepted (ISO instant): the lifetime counts from here. */
  acceptedAt: string;
  /** How many attempts have failed, this one included (1 after the first). */
  failedAttempts: number;
  /** When this attempt failed (ISO instant). */
  failedAt: string;
}

/** The schedule's numbers; tests of the pipeline shorten them (the defaults are the decision). */
export interface RetrySchedule {
  delaysMs: readonly number[];
  intervalMs: number;
  lifetimeMs: number;
}

export const DEFAULT_RETRY_SCHEDULE: RetrySchedule = {
  delaysMs: RETRY_DELAYS_MS,
  intervalMs: RETRY_INTERVAL_MS,
  lifetimeMs: DELIVERY_LIFETIME_MS,
};

export function nextRetry(
  { acceptedAt, failedAttempts, failedAt }: FailedAttempt,
  schedule: RetrySchedule = DEFAULT_RETRY_SCHEDULE,
): RetryDecision {
  if (!Number.isInteger(failedAttempts) || failedAttempts < 1)
    throw new RangeError(`nextRetry: failedAttempts must be a positive integer, got ${failedAttempts}`);
  const accepted = Date.parse(acceptedAt);
  const failed = Date.parse(failedAt);
  if (Number.isNaN(accepted) || Number.isNaN(failed))
    throw new RangeError('nextRetry: acceptedAt and failedAt must be ISO instants');
  const deadline = accepted + schedule.lifetimeMs;
  if (failed >= deadline) return { kind: 'expire' };
  const delay = schedule.delaysMs[failedAttempts - 1] ?? schedule.intervalMs;
  return { kind: 'retry', at: new Date(Math.min(failed + delay, deadline)).toISOString() };
}
