import type { FilterVerdict } from '../../domain/messages/spam.ts';

export interface SpamQuestion {
  /** The stored message as it arrived (our trace lines on top). */
  raw: Buffer;
  ip: string;
  helo: string;
  /** Empty for the null sender. */
  mailFrom: string;
  rcptTo: string[];
  /** The listener's queue id, so the filter's log and ours name the same message. */
  queueId: string;
}

/**
 * A spam filter asked about each arriving message (`SPAM_FILTER_URL`). It answers null when it
 * could not answer (down, slow, a broken reply): mail keeps flowing on the verdict
 * authentication alone gives, rather than waiting on or bouncing for a filter outage.
 */
export interface SpamFilter {
  check(question: SpamQuestion): Promise<FilterVerdict | null>;
}
