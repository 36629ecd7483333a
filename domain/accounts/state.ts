import type { AccountEvent } from './events.ts';

export interface AccountState {
  userId: string | null;
  /** Sessions begun and not signed out, by id: when each expires. */
  sessions: Record<string, string>;
  /** On when not null: the backup codes' MACs, null where spent. */
  twoFactor: { backupCodes: (string | null)[] } | null;
  /** The last authenticator time step accepted; a code of that step or before is refused. */
  lastTotpStep: number | null;
  /** When codes to turn two-factor off were refused, the last few. */
  rejectedAt: string[];
}

const maxStep = (a: number | null, b: number | null) => (a === null ? b : b === null ? a : Math.max(a, b));

export const accountAggregate = {
  initialState: { userId: null, sessions: {}, twoFactor: null, lastTotpStep: null, rejectedAt: [] } as AccountState,
  evolve: (state: AccountState, event: AccountEvent): AccountState => {
    switch (event.type) {
      case 'AccountCreated':
        return { ...state, userId: event.data.userId };
      case 'SignedIn':
        return {
          ...state,
          // Accounts from before AccountCreated (a workspace owner's) are known by their first sign-in.
          userId: state.userId ?? event.data.userId,
          sessions: { ...state.sessions, [event.data.sessionId]: event.data.expiresAt },
          lastTotpStep: maxStep(state.lastTotpStep, event.data.totpStep),
        };
      case 'SignedOut': {
        const { [event.data.sessionId]: _ended, ...sessions } = state.sessions;
        return { ...state, sessions };
      }
      case 'TwoFactorEnabled':
        return {
          ...state,
          twoFactor: { backupCodes: [...event.data.backupCodeHashes] },
          lastTotpStep: maxStep(state.lastTotpStep, event.data.totpStep),
        };
      case 'BackupCodeUsed': {
        if (!state.twoFactor) return state;
        const backupCodes = state.twoFactor.backupCodes.map((c, i) => (i === event.data.index ? null : c));
        return { ...state, twoFactor: { backupCodes } };
      }
      case 'TwoFactorDisabled':
        // Replay protection is per secret: the next secret's codes start afresh.
        return { ...state, twoFactor: null, rejectedAt: [], lastTotpStep: null };
      case 'SecondFactorRejected':
        // Only the last few can pause the form (domain/accounts/decide.ts `TWO_FACTOR_OFF_TRIES`).
        return { ...state, rejectedAt: [...state.rejectedAt, event.data.rejectedAt].slice(-10) };
      case 'StepUpFactorUsed':
        return { ...state, lastTotpStep: maxStep(state.lastTotpStep, event.data.totpStep) };
    }
  },
};
