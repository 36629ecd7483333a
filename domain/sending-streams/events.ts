import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';
import { SENDING_STREAMS } from '../emails/events.ts';

/**
 * The sending lanes of a workspace, one stream for both: a lane pauses alone when its bounce or
 * complaint rate passes its threshold (processes/sending-streams/guard.ts decides where the counts
 * are known), and a person resumes it. Thresholds and why: docs/decisions/sending.md.
 */
export const PAUSE_REASONS = ['bounce_rate', 'complaint_rate'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

export const SendingStreamPaused = defineEvent(
  'SendingStreamPaused',
  z.object({
    stream: z.enum(SENDING_STREAMS),
    reason: z.enum(PAUSE_REASONS),
    /** The rate that passed its threshold, and the counts of the window it was measured over. */
    rate: z.number(),
    sent: z.number().int(),
    bounced: z.number().int(),
    complained: z.number().int(),
    /** Set when this pause came soon after a resume: no resume before then. */
    lockedUntil: z.string().nullable(),
    pausedAt: z.string(),
  }),
);

export const SendingStreamResumed = defineEvent(
  'SendingStreamResumed',
  z.object({ stream: z.enum(SENDING_STREAMS), resumedAt: z.string() }),
);

export const sendingStreamEvents = [SendingStreamPaused, SendingStreamResumed];
export type SendingStreamEvent = EventOf<typeof SendingStreamPaused> | EventOf<typeof SendingStreamResumed>;

export const sendingStreamsStream = (workspaceId: string) => `ws-${workspaceId}.sending-streams`;
