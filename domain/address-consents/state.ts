import type { AddressConsentEvent } from './events.ts';

/** Consent mails one destination receives in `CONSENT_WINDOW_MS`, from all workspaces together. */
export const CONSENT_MAILS_MAX = 5;

export interface AddressConsentState {
  /** When the latest consent mails were allowed, oldest first; only the last few can matter. */
  sentAt: string[];
}

export const addressConsentAggregate = {
  initialState: { sentAt: [] } as AddressConsentState,
  evolve(state: AddressConsentState, event: AddressConsentEvent): AddressConsentState {
    return { sentAt: [...state.sentAt, event.data.allowedAt].slice(-CONSENT_MAILS_MAX) };
  },
};
