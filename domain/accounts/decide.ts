import type { AccountEvent } from './events.ts';
import type { AccountState } from './state.ts';

export interface OpenAccount {
  userId: string;
  email: string;
  now: string;
}

/** The person's account, made the first time their email is seen; later it is kept as it is. */
export function decideOpenAccount(state: AccountState, cmd: OpenAccount): AccountEvent[] {
  if (state.userId !== null) return [];
  const email = cmd.email.toLowerCase();
  return [
    {
      type: 'AccountCreated',
      data: { userId: cmd.userId, email, name: email.split('@')[0] ?? email, image: null, createdAt: cmd.now },
    },
  ];
}
