import type { SendingStream } from '../emails/events.ts';
import { fail } from '../shared/errors.ts';
import type { PauseReason, SendingStreamEvent } from './events.ts';
import type { SendingStreamsState } from './state.ts';

const DAY_MS = 24 * 60 * 60 * 1000;

/**
 * When a lane pauses: its rate over the last `windowDays` (since its last resume, when later)
 * passes the threshold, on at least the minimum volume of final answers. Figures and sources:
 * docs/decisions/sending.md.
 */
export const LANE_THRESHOLDS = {
  windowDays: 7,
  /** Hard bounces per recipient sent (delivered, bounced or expired): AWS SES puts an account under review at 5 %. */
  bounceRate: 0.05,
  minimumForBounceRate: 100,
  /** Complaints per recipient sent: Google's and Yahoo's bulk sender line is 0.3 %. */
  complaintRate: 0.003,
  minimumForComplaintRate: 1000,
  /** A lane that trips again this soon after a resume is locked for as long. */
  relapseMs: DAY_MS,
} as const;

export interface LaneCounts {
  sent: number;
  bounced: number;
  complained: number;
}

/**
 * What a final answer adds to a lane's `sent`: 1, except for a bounce a DSN reported after the
 * recipient's server took the message (`source: 'dsn'`), whose delivery counted it already.
 */
export const sentBy = (bounce: { source?: 'dsn' }) => (bounce.source === 'dsn' ? 0 : 1);

/** The reason a lane with these counts pauses, with its rate; null when it does not. */
export function tripOf(c: LaneCounts): { reason: PauseReason; rate: number } | null {
  const t = LANE_THRESHOLDS;
  if (c.sent >= t.minimumForBounceRate && c.bounced / c.sent > t.bounceRate)
    return { reason: 'bounce_rate', rate: c.bounced / c.sent };
  if (c.sent >= t.minimumForComplaintRate && c.complained / c.sent > t.complaintRate)
    return { reason: 'complaint_rate', rate: c.complained / c.sent };
  return null;
}

/**
 * Pauses a lane whose rate passed its threshold; nothing when it is paused already. A pause within
 * a day of the lane's last resume locks it for a day: the resume did not fix what tripped it, and
 * resuming again at once would only send more of the same mail.
 */
export function decidePauseStream(
  s: SendingStreamsState,
  cmd: { stream: SendingStream; reason: PauseReason; rate: number; counts: LaneCounts; now: string },
): SendingStreamEvent[] {
  const lane = s[cmd.stream];
  if (lane.paused) return [];
  const now = Date.parse(cmd.now);
  const relapse = lane.resumedAt !== null && now - Date.parse(lane.resumedAt) < LANE_THRESHOLDS.relapseMs;
  return [
    {
      type: 'SendingStreamPaused',
      data: {
        stream: cmd.stream,
        reason: cmd.reason,
        rate: cmd.rate,
        ...cmd.counts,
        lockedUntil: relapse ? new Date(now + LANE_THRESHOLDS.relapseMs).toISOString() : null,
        pausedAt: cmd.now,
      },
    },
  ];
}

/** Resumes a paused lane; nothing when it is open; `stream_locked` while a relapse lock holds. */
export function decideResumeStream(
  s: SendingStreamsState,
  cmd: { stream: SendingStream; now: string },
): SendingStreamEvent[] {
  const lane = s[cmd.stream];
  if (!lane.paused) return [];
  if (lane.lockedUntil !== null && Date.parse(cmd.now) < Date.parse(lane.lockedUntil))
    fail(
      'stream_locked',
      `The ${cmd.stream} lane paused again within a day of its last resume; it can be resumed from ${lane.lockedUntil}.`,
      'stream',
    );
  return [{ type: 'SendingStreamResumed', data: { stream: cmd.stream, resumedAt: cmd.now } }];
}

/** Refuses a send on a paused lane (409 `stream_paused`). */
export function assertLaneOpen(s: SendingStreamsState, stream: SendingStream): void {
  const lane = s[stream];
  if (lane.paused)
    fail(
      'stream_paused',
      `The ${stream} lane is paused: its ${lane.reason === 'complaint_rate' ? 'complaint' : 'bounce'} rate passed its threshold. Resume it with POST /sending/streams/${stream}/resume.`,
      'stream',
    );
}
