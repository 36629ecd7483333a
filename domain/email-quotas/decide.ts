import type { EmailQuotaEvent } from './events.ts';
import type { EmailQuotaState } from './state.ts';

/**
 * Live messages a workspace may send per calendar month when nothing else is configured
 * (`SEND_MONTHLY_ALLOWANCE`): generous, so the allowance stops runaway sending, not normal use. The
 * spec leaves the plans' amounts unshown.
 */
export const DEFAULT_MONTHLY_ALLOWANCE = 1_000_000;

/** `YYYY-MM` of an instant, UTC: the month a send counts in. */
export const monthOf = (now: string): string => now.slice(0, 7);

/** Whole seconds from `now` to 00:00 UTC on the first of the next month, when the allowance starts again. */
export function secondsToNextMonth(now: string): number {
  const d = new Date(now);
  const next = Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1);
  return Math.max(1, Math.ceil((next - d.getTime()) / 1000));
}

/**
 * Reserves up to `wanted` sends of the month within `allowance`: as many as are left, maybe
 * fewer than asked (a batch's items past the allowance are refused one by one). Nothing left:
 * nothing written, and the command refuses with 429 `send_quota_exceeded`.
 */
export function decideReserveSends(
  state: EmailQuotaState,
  cmd: { month: string; wanted: number; allowance: number; now: string },
): EmailQuotaEvent[] {
  const granted = Math.min(cmd.wanted, Math.max(0, cmd.allowance - state.used));
  if (granted === 0) return [];
  return [
    {
      type: 'EmailQuotaReserved',
      data: { month: cmd.month, count: granted, used: state.used + granted, reservedAt: cmd.now },
    },
  ];
}
