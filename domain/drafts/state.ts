import type { DraftContent, DraftEvent } from './events.ts';

export interface DraftState {
  exists: boolean;
  /** Deleted or sent: the id answers 404 from then on. */
  gone: boolean;
  /** Set once sent. */
  emailId: string | null;
  content: DraftContent | null;
}

export const draftAggregate = {
  initialState: { exists: false, gone: false, emailId: null, content: null } as DraftState,
  evolve(state: DraftState, event: DraftEvent): DraftState {
    switch (event.type) {
      case 'DraftCreated':
      case 'DraftUpdated':
        return { ...state, exists: true, content: event.data.content };
      case 'DraftDeleted':
        return { ...state, gone: true };
      case 'DraftSent':
        return { ...state, gone: true, emailId: event.data.emailId };
    }
  },
};
