import { fail } from '../shared/errors.ts';
import type { BroadcastEvent } from './events.ts';
import type { BroadcastDefinition, BroadcastState } from './state.ts';

/** At most this many audiences per broadcast (the contacts create body's own bound). */
export const BROADCAST_AUDIENCES_MAX = 25;
export const BROADCAST_NAME_MAX = 200;

/** A stream that holds the broadcast already is a repeat: nothing new. */
export function decideCreateBroadcast(state: BroadcastState, cmd: BroadcastDefinition): BroadcastEvent[] {
  if (state.created) return [];
  return [{ type: 'BroadcastCreated', data: cmd }];
}

/**
 * Starts a broadcast not yet started with the recipients taken. Appended with the revision read,
 * so a cancel and the start cannot both win; a broadcast cancelled or started already decides nothing.
 */
export function decideStartBroadcast(
  state: BroadcastState,
  cmd: { recipients: number; now: string },
): BroadcastEvent[] {
  if (!state.created || state.status !== 'scheduled') return [];
  return [
    {
      type: 'BroadcastStarted',
      data: { broadcastId: state.created.broadcastId, recipients: cmd.recipients, startedAt: cmd.now },
    },
  ];
}

/** Only before the start (409 `email_not_cancellable` after); cancelling twice decides nothing. */
export function decideCancelBroadcast(state: BroadcastState, cmd: { now: string }): BroadcastEvent[] {
  if (!state.created) fail('resource_not_found', 'No such broadcast.', 'id');
  if (state.status === 'cancelled') return [];
  if (state.status !== 'scheduled')
    fail('email_not_cancellable', 'The broadcast has started; it can no longer be cancelled.', null);
  return [{ type: 'BroadcastCancelled', data: { broadcastId: state.created.broadcastId, cancelledAt: cmd.now } }];
}

export function decideCompleteBroadcast(
  state: BroadcastState,
  cmd: { accepted: number; refused: number; now: string },
): BroadcastEvent[] {
  if (!state.created || state.status !== 'sending') return [];
  return [
    {
      type: 'BroadcastCompleted',
      data: {
        broadcastId: state.created.broadcastId,
        accepted: cmd.accepted,
        refused: cmd.refused,
        completedAt: cmd.now,
      },
    },
  ];
}
