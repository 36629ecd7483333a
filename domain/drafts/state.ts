import type { DraftContent, DraftEvent } from './events.ts';

export interface DraftState {
  /** Deleted or sent: the id answers 404 from then on. */
  gone: boolean;
  /** Set once sent. */
  emailId: string | null;
  /** Null until created. */
  content: DraftContent | null;
}

/** Created, and neither deleted nor sent. */
export const isLive = (state: DraftState): state is DraftState & { content: DraftContent } =>
  state.content !== null && !state.gone;

export const draftAggregate = {
  initialState: { gone: false, emailId: null, content: null } as DraftState,
  evolve(state: DraftState, event: DraftEvent): DraftState {
    switch (event.type) {
      case 'DraftCreated':
      case 'DraftUpdated':
        return { ...state, content: event.data.content };
      case 'DraftDeleted':
        return { ...state, gone: true };
      case 'DraftSent':
        return { ...state, gone: true, emailId: event.data.emailId };
    }
  },
};
