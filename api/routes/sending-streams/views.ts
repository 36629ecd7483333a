import type { Kysely } from 'kysely';
import { z } from 'zod';
import { SENDING_STREAMS, type SendingStream } from '../../../domain/emails/events.ts';
import { LANE_THRESHOLDS } from '../../../domain/sending-streams/decide.ts';
import { PAUSE_REASONS } from '../../../domain/sending-streams/events.ts';
import {
  type SendingStreamStateRow,
  streamCounts,
  streamStates,
} from '../../../projections/sending-streams/queries.ts';
import type { ReadModels } from '../../../projections/tables.ts';

const rate = z.number().nullable().describe('Per recipient sent; null when nothing was sent in the window.');

export const sendingStreamView = z.object({
  object: z.literal('sending_stream'),
  stream: z.enum(SENDING_STREAMS),
  status: z.enum(['active', 'paused']),
  pauseReason: z.enum(PAUSE_REASONS).nullable(),
  pausedAt: z.string().nullable(),
  lockedUntil: z.string().nullable().describe('A pause soon after a resume: `stream_locked` for resumes before it.'),
  resumedAt: z.string().nullable(),
  window: z.object({ days: z.number().int(), from: z.string().describe('First UTC day counted.') }),
  sent: z.number().int().describe('Recipients with a final answer (delivered, bounced or expired) in the window.'),
  bounced: z.number().int().describe('Hard bounces.'),
  complained: z.number().int(),
  bounceRate: rate,
  complaintRate: rate,
  thresholds: z.object({
    bounceRate: z.number(),
    minimumForBounceRate: z.number().int(),
    complaintRate: z.number(),
    minimumForComplaintRate: z.number().int(),
  }),
});
export type SendingStreamView = z.infer<typeof sendingStreamView>;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function viewStream(
  stream: SendingStream,
  from: string,
  state: SendingStreamStateRow | undefined,
  counts: { sent: number; bounced: number; complained: number } | undefined,
): SendingStreamView {
  const { sent, bounced, complained } = counts ?? { sent: 0, bounced: 0, complained: 0 };
  const t = LANE_THRESHOLDS;
  return {
    object: 'sending_stream',
    stream,
    status: state?.paused ? 'paused' : 'active',
    pauseReason: state?.paused ? (state.reason as SendingStreamView['pauseReason']) : null,
    pausedAt: state?.paused ? iso(state.paused_at) : null,
    lockedUntil: state?.paused ? iso(state.locked_until) : null,
    resumedAt: iso(state?.resumed_at ?? null),
    window: { days: t.windowDays, from },
    sent,
    bounced,
    complained,
    bounceRate: sent === 0 ? null : bounced / sent,
    complaintRate: sent === 0 ? null : complained / sent,
    thresholds: {
      bounceRate: t.bounceRate,
      minimumForBounceRate: t.minimumForBounceRate,
      complaintRate: t.complaintRate,
      minimumForComplaintRate: t.minimumForComplaintRate,
    },
  };
}

const firstDay = () => new Date(Date.now() - (LANE_THRESHOLDS.windowDays - 1) * 86_400_000).toISOString().slice(0, 10);

/** Both lanes as `GET /sending/streams` lists them (also what a task's `sending_overview` tells). */
export async function viewLanes(db: Kysely<ReadModels>, workspaceId: string): Promise<SendingStreamView[]> {
  const from = firstDay();
  const [states, counts] = await Promise.all([streamStates(db, workspaceId), streamCounts(db, workspaceId, from)]);
  return SENDING_STREAMS.map((stream) =>
    viewStream(
      stream,
      from,
      states.find((s) => s.stream === stream),
      counts.find((c) => c.stream === stream),
    ),
  );
}
