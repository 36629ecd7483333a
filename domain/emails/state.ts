import type { EmailEvent } from './events.ts';

/**
 * What deciding on a message needs: whether it was accepted, when it is due, and whether it was
 * cancelled or taken in hand by delivery. The per-recipient outcomes are the read model's.
 */
export interface EmailState {
  accepted: { emailId: string; scheduledAt: string | null } | null;
  cancelled: boolean;
  sendingStarted: boolean;
}

export const emailAggregate = {
  initialState: { accepted: null, cancelled: false, sendingStarted: false } as EmailState,
  evolve(state: EmailState, event: EmailEvent): EmailState {
    switch (event.type) {
      case 'EmailAccepted':
        return { ...state, accepted: { emailId: event.data.emailId, scheduledAt: event.data.scheduledAt } };
      case 'EmailCancelled':
        return { ...state, cancelled: true };
      case 'EmailSendingStarted':
        return { ...state, sendingStarted: true };
      default:
        return state;
    }
  },
};
