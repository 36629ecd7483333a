import type { EmailQuotaEvent } from './events.ts';

export interface EmailQuotaState {
  used: number;
}

export const emailQuotaAggregate = {
  initialState: { used: 0 } as EmailQuotaState,
  evolve(_state: EmailQuotaState, event: EmailQuotaEvent): EmailQuotaState {
    return { used: event.data.used };
  },
};
