import type { AccountEvent } from './events.ts';

export interface AccountState {
  userId: string | null;
}

export const accountAggregate = {
  initialState: { userId: null } as AccountState,
  evolve: (_state: AccountState, event: AccountEvent): AccountState => ({ userId: event.data.userId }),
};
