import type { SendingStatus } from './check.ts';

/** How long a negative verdict (pending, failed) is trusted; past it the verdict counts as unknown. */
export const NEGATIVE_VERDICT_TRUSTED_MS = 24 * 60 * 60 * 1000;

export interface SendingStanding {
  /** The last check's verdict. */
  status: SendingStatus;
  /** When it was made; null before the first check. */
  checkedAt: string | null;
  /** The domain has passed a check before (sending was verified at some time). */
  everVerified: boolean;
}

/**
 * Whether mail may go out from the domain now. A fresh negative verdict stops it. An unknown
 * one (DNS did not answer, or a negative verdict older than a day that nobody has re-checked)
 * does not overturn a verification the domain once had, so a DNS outage or a stalled re-check
 * never stops a working domain; a domain never verified cannot send on an unknown. Hence
 * `canSend` can be true while `status` still says pending.
 */
export function canSend(standing: SendingStanding, now: string): boolean {
  switch (effectiveVerdict(standing, now)) {
    case 'verified':
      return true;
    case 'unknown':
      return standing.everVerified;
    default:
      return false;
  }
}

/** The verdict as the rules read it: a negative one past its day is unknown. */
export function effectiveVerdict(standing: SendingStanding, now: string): SendingStatus {
  const { status, checkedAt } = standing;
  if (
    (status === 'pending' || status === 'failed') &&
    checkedAt !== null &&
    Date.parse(now) - Date.parse(checkedAt) > NEGATIVE_VERDICT_TRUSTED_MS
  )
    return 'unknown';
  return status;
}
