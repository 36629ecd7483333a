import type { DraftContent, DraftEvent } from './events.ts';

export interface DraftState {
  /** Deleted or sent: the id answers 404 from then on. */
  gone: boolean;
  /** Set once sent. */
  emailId: string | null;
  /** Null until created. */
  content: DraftContent | null;
  /** Held for a send in progress (DraftSending), until it is sent or refused. */
  sending: { emailId: string; at: string } | null;
}

/** How long a send in progress holds the draft; past it, a send that died midway no longer blocks edits. */
export const SEND_HOLD_MS = 120_000;

/** A send in progress holds the draft at `now`. */
export const isHeld = (state: DraftState, now: string): boolean =>
  state.sending !== null && Date.parse(now) - Date.parse(state.sending.at) < SEND_HOLD_MS;

/** Created, and neither deleted nor sent. */
export const isLive = (state: DraftState): state is DraftState & { content: DraftContent } =>
  state.content !== null && !state.gone;

export const draftAggregate = {
  initialState: { gone: false, emailId: null, content: null, sending: null } as DraftState,
  evolve(state: DraftState, event: DraftEvent): DraftState {
    switch (event.type) {
      case 'DraftCreated':
      case 'DraftUpdated':
        return { ...state, content: event.data.content };
      case 'DraftDeleted':
        return { ...state, gone: true };
      case 'DraftSending':
        return { ...state, sending: { emailId: event.data.emailId, at: event.data.at } };
      case 'DraftSendRefused':
        return { ...state, sending: null };
      case 'DraftSent':
        return { ...state, gone: true, emailId: event.data.emailId, sending: null };
    }
  },
};
