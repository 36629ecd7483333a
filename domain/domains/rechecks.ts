import type { SendingStatus } from './check.ts';

/** The spec: reading an unverified domain re-checks DNS when the last check is older than this. */
export const RECHECK_ON_READ_MS = 20_000;

export interface CheckStanding {
  receivingVerified: boolean;
  sendingStatus: SendingStatus;
  lastCheckedAt: string | null;
}

/**
 * A domain is verified when it both receives (our MX found) and sends (`verified`); anything less
 * is unverified, so a single read re-checks it once the last check is 20 s old. A domain that
 * only sends through us (its MX elsewhere) stays unverified by this rule and is re-checked on
 * reads: at most one lookup round per 20 s, the price of showing fresh records while it is set up.
 */
export function recheckOnRead(standing: CheckStanding, now: string): boolean {
  if (standing.receivingVerified && standing.sendingStatus === 'verified') return false;
  return standing.lastCheckedAt === null || Date.parse(now) - Date.parse(standing.lastCheckedAt) > RECHECK_ON_READ_MS;
}

/**
 * Nothing left for the owner to publish: receiving and sending verified and no host waiting for
 * its record. A settled domain is re-checked rarely; one being set up, often (processes/domains).
 */
export function settled(check: {
  receiving: { verifiedAt: string | null };
  sending: { status: SendingStatus };
  tracking: { status: string };
  storage: { status: string };
}): boolean {
  return (
    check.receiving.verifiedAt !== null &&
    check.sending.status === 'verified' &&
    check.tracking.status !== 'pending' &&
    check.storage.status !== 'pending'
  );
}
