import type { TempInboxAllowanceEvent, TempInboxEvent } from './events.ts';
import { TEMP_INBOX_CREATES_MAX } from './rules.ts';

export interface TempInboxState {
  exists: boolean;
  address: string;
  expiresAt: string;
  expired: boolean;
  /** Header Message-IDs kept, so a sender repeating a delivery whose 250 it lost files it once. */
  messageIds: string[];
  messages: number;
}

export const tempInboxAggregate = {
  initialState: {
    exists: false,
    address: '',
    expiresAt: '',
    expired: false,
    messageIds: [],
    messages: 0,
  } as TempInboxState,
  evolve(state: TempInboxState, event: TempInboxEvent): TempInboxState {
    switch (event.type) {
      case 'TempInboxCreated':
        return { ...state, exists: true, address: event.data.address, expiresAt: event.data.expiresAt };
      case 'TempInboxMessageReceived': {
        const id = event.data.summary.messageId;
        return {
          ...state,
          messages: state.messages + 1,
          messageIds: id === null ? state.messageIds : [...state.messageIds, id],
        };
      }
      case 'TempInboxExpired':
        return { ...state, expired: true };
    }
  },
};

export interface TempInboxAllowanceState {
  /** When the network's latest creates were counted, oldest first; only the last few can matter. */
  takenAt: string[];
}

export const tempInboxAllowanceAggregate = {
  initialState: { takenAt: [] } as TempInboxAllowanceState,
  evolve(state: TempInboxAllowanceState, event: TempInboxAllowanceEvent): TempInboxAllowanceState {
    return { takenAt: [...state.takenAt, event.data.takenAt].slice(-TEMP_INBOX_CREATES_MAX) };
  },
};
