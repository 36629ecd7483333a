import type { SendingStream } from '../emails/events.ts';
import type { PauseReason, SendingStreamEvent } from './events.ts';

export interface LaneState {
  paused: boolean;
  pausedAt: string | null;
  reason: PauseReason | null;
  lockedUntil: string | null;
  resumedAt: string | null;
}

export type SendingStreamsState = Record<SendingStream, LaneState>;

const OPEN: LaneState = { paused: false, pausedAt: null, reason: null, lockedUntil: null, resumedAt: null };

export const sendingStreamsAggregate = {
  initialState: { transactional: OPEN, broadcast: OPEN } as SendingStreamsState,
  evolve(state: SendingStreamsState, event: SendingStreamEvent): SendingStreamsState {
    const lane = state[event.data.stream];
    switch (event.type) {
      case 'SendingStreamPaused': {
        const d = event.data;
        return {
          ...state,
          [d.stream]: { ...lane, paused: true, pausedAt: d.pausedAt, reason: d.reason, lockedUntil: d.lockedUntil },
        };
      }
      case 'SendingStreamResumed':
        return {
          ...state,
          [event.data.stream]: { ...lane, paused: false, lockedUntil: null, resumedAt: event.data.resumedAt },
        };
    }
  },
};
