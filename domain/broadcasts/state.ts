import type { z } from 'zod';
import type { BroadcastCreated, BroadcastEvent } from './events.ts';

export type BroadcastDefinition = z.output<(typeof BroadcastCreated)['schema']>;

export type BroadcastStatus = 'scheduled' | 'sending' | 'completed' | 'cancelled';

export interface BroadcastState {
  created: BroadcastDefinition | null;
  status: BroadcastStatus | null;
  recipients: number | null;
}

export const broadcastAggregate = {
  initialState: { created: null, status: null, recipients: null } as BroadcastState,
  evolve(state: BroadcastState, event: BroadcastEvent): BroadcastState {
    switch (event.type) {
      case 'BroadcastCreated':
        return { ...state, created: event.data, status: 'scheduled' };
      case 'BroadcastStarted':
        return { ...state, status: 'sending', recipients: event.data.recipients };
      case 'BroadcastCancelled':
        return { ...state, status: 'cancelled' };
      case 'BroadcastCompleted':
        return { ...state, status: 'completed' };
      default:
        return state;
    }
  },
};
