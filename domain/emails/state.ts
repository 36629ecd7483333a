import type { EmailEvent, SendingStream } from './events.ts';

/**
 * What deciding on a message needs: whether it was accepted (with what an engagement event
 * repeats of it), when it is due, whether it was cancelled or taken in hand by delivery, and how
 * many opens and clicks it has recorded. The per-recipient outcomes are the read model's.
 */
export interface EmailState {
  accepted: {
    emailId: string;
    scheduledAt: string | null;
    messageId: string;
    from: { addressId: string; domainId: string; email: string };
    stream: SendingStream;
    /** Lower-case, every recipient of the message (suppressed ones too). */
    recipients: string[];
  } | null;
  cancelled: boolean;
  sendingStarted: boolean;
  /** `EmailOpened` and `EmailLinkClicked` recorded so far. */
  engagements: number;
}

export const emailAggregate = {
  initialState: { accepted: null, cancelled: false, sendingStarted: false, engagements: 0 } as EmailState,
  evolve(state: EmailState, event: EmailEvent): EmailState {
    switch (event.type) {
      case 'EmailAccepted': {
        const d = event.data;
        return {
          ...state,
          accepted: {
            emailId: d.emailId,
            scheduledAt: d.scheduledAt,
            messageId: d.messageId,
            from: { addressId: d.from.addressId, domainId: d.from.domainId, email: d.from.email },
            stream: d.stream,
            recipients: d.recipients.map((r) => r.email.toLowerCase()),
          },
        };
      }
      case 'EmailCancelled':
        return { ...state, cancelled: true };
      case 'EmailSendingStarted':
        return { ...state, sendingStarted: true };
      case 'EmailOpened':
      case 'EmailLinkClicked':
        return { ...state, engagements: state.engagements + 1 };
      default:
        return state;
    }
  },
};
