import { type Authentication, verdictOfAuthentication } from './authentication.ts';

/** What a spam filter said about a message (rspamd's words). */
export interface FilterVerdict {
  /** `no action`, `greylist`, `add header`, `rewrite subject`, `soft reject`, `reject`. */
  action: string;
  score: number;
  requiredScore: number;
  /** The rules that matched with a score, highest first (for people, not for decisions). */
  symbols: string[];
}

export type SpamReason = 'dmarc_reject' | 'dmarc_quarantine' | 'filter';

export interface SpamVerdict {
  spam: boolean;
  reasons: SpamReason[];
  /** The filter's score, null when no filter answered. */
  score: number | null;
}

/**
 * Filter actions that mean "this is spam" for a mailbox: mark it (add header, rewrite subject)
 * or refuse it (reject). Greylisting and soft rejects ask the sender to come back later; the
 * message we already hold is not spam for them.
 */
const SPAM_ACTIONS = new Set(['add header', 'rewrite subject', 'reject']);

/** A message is spam when authentication says so (DMARC) or the filter does; both reasons kept. */
export function spamVerdict(auth: Pick<Authentication, 'dmarc'>, filter: FilterVerdict | null): SpamVerdict {
  const reasons: SpamReason[] = [];
  const byAuth = verdictOfAuthentication(auth);
  if (byAuth.spam) reasons.push(byAuth.reason);
  if (filter && SPAM_ACTIONS.has(filter.action)) reasons.push('filter');
  return { spam: reasons.length > 0, reasons, score: filter ? filter.score : null };
}
