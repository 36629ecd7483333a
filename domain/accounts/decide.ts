import { fail } from '../shared/errors.ts';
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

/** How long a session of our pages lasts, however active: then the person signs in again. */
export const SESSION_TTL_MS = 14 * 24 * 3_600_000;
/** Backup codes made when two-factor is turned on. */
export const BACKUP_CODE_COUNT = 10;

/**
 * The second factor a sign-in or a change of two-factor was proven with, as the command found it:
 * the authenticator's time step of a code that matched the secret, or the MAC of a backup code
 * (whether it is one of ours, and unspent, is decided here).
 */
export type SecondFactor = { kind: 'totp'; step: number } | { kind: 'backup_code'; hash: string };

function proven(state: AccountState, factor: SecondFactor, param: string): AccountEvent[] {
  if (factor.kind === 'totp') {
    if (state.lastTotpStep !== null && factor.step <= state.lastTotpStep)
      fail('code_reused', 'That authenticator code was used already; wait for the next one.', param);
    return [];
  }
  const index = state.twoFactor?.backupCodes.indexOf(factor.hash) ?? -1;
  if (index < 0) fail('code_invalid', 'That backup code is not one of yours, or it was used already.', param);
  return [];
}

const spent = (state: AccountState, userId: string, factor: SecondFactor, now: string): AccountEvent[] =>
  factor.kind === 'backup_code'
    ? [
        {
          type: 'BackupCodeUsed',
          data: { userId, index: state.twoFactor!.backupCodes.indexOf(factor.hash), usedAt: now },
        },
      ]
    : [];

export interface SignIn {
  /** The account's id as the read models know it (an owner's from before AccountCreated has no stream yet). */
  userId: string;
  sessionId: string;
  /** Null: the mailed code alone. */
  secondFactor: SecondFactor | null;
  now: string;
}

/**
 * A session begins once the mailed code matched and, with two-factor on, a second factor: an
 * authenticator code not used before, or an unspent backup code, which is spent by it.
 */
export function decideSignIn(state: AccountState, cmd: SignIn): AccountEvent[] {
  const userId = state.userId ?? cmd.userId;
  const factor = cmd.secondFactor;
  if (state.twoFactor && !factor)
    fail('two_factor_required', 'Two-factor is on: an authenticator or backup code is needed.', 'code');
  if (!state.twoFactor && factor) fail('two_factor_off', 'Two-factor is off for this account.', 'code');
  if (factor) proven(state, factor, 'code');
  return [
    {
      type: 'SignedIn',
      data: {
        userId,
        sessionId: cmd.sessionId,
        factors: factor ? ['email_code', factor.kind] : ['email_code'],
        totpStep: factor?.kind === 'totp' ? factor.step : null,
        signedInAt: cmd.now,
        expiresAt: new Date(Date.parse(cmd.now) + SESSION_TTL_MS).toISOString(),
      },
    },
    ...(factor ? spent(state, userId, factor, cmd.now) : []),
  ];
}

/** Ends a session; one already ended (or never begun) decides nothing. */
export function decideSignOut(state: AccountState, cmd: { sessionId: string; now: string }): AccountEvent[] {
  if (!state.userId || !(cmd.sessionId in state.sessions)) return [];
  return [{ type: 'SignedOut', data: { userId: state.userId, sessionId: cmd.sessionId, signedOutAt: cmd.now } }];
}

/** Ends every session of the person that has not ended or expired (signed out everywhere). */
export function decideSignOutEverywhere(state: AccountState, cmd: { now: string }): AccountEvent[] {
  const userId = state.userId;
  if (!userId) return [];
  const t = Date.parse(cmd.now);
  return Object.entries(state.sessions)
    .filter(([, expiresAt]) => Date.parse(expiresAt) > t)
    .map(([sessionId]) => ({ type: 'SignedOut', data: { userId, sessionId, signedOutAt: cmd.now } }));
}

export interface EnableTwoFactor {
  /** The step of the authenticator code that confirmed the new secret. */
  totpStep: number;
  backupCodeHashes: string[];
  now: string;
}

/** Turns two-factor on, once the person's authenticator showed a code of the new secret. */
export function decideEnableTwoFactor(state: AccountState, cmd: EnableTwoFactor): AccountEvent[] {
  if (!state.userId) fail('account_not_found', 'No such account.');
  if (state.twoFactor) fail('two_factor_on', 'Two-factor is on already.');
  if (cmd.backupCodeHashes.length !== BACKUP_CODE_COUNT || new Set(cmd.backupCodeHashes).size !== BACKUP_CODE_COUNT)
    throw new RangeError(`decideEnableTwoFactor: ${BACKUP_CODE_COUNT} distinct backup codes are needed`);
  proven(state, { kind: 'totp', step: cmd.totpStep }, 'code');
  return [
    {
      type: 'TwoFactorEnabled',
      data: {
        userId: state.userId,
        backupCodeHashes: [...cmd.backupCodeHashes],
        totpStep: cmd.totpStep,
        enabledAt: cmd.now,
      },
    },
  ];
}

/** Wrong codes that pause turning two-factor off, and for how long each one counts. */
export const TWO_FACTOR_OFF_TRIES = 5;
export const TWO_FACTOR_OFF_WINDOW_MS = 3_600_000;

const unused = (state: AccountState, factor: SecondFactor): boolean =>
  factor.kind === 'totp'
    ? state.lastTotpStep === null || factor.step > state.lastTotpStep
    : (state.twoFactor?.backupCodes.includes(factor.hash) ?? false);

/**
 * Turns two-factor off, proven by a second factor (a session alone is not enough: a session left
 * open on a shared machine must not be able to remove it). A wrong, reused or spent code is
 * recorded, and five in an hour pause the form until the oldest is an hour old, so a session
 * cannot be used to try codes one after another. Off already decides nothing.
 */
export function decideDisableTwoFactor(
  state: AccountState,
  cmd: { secondFactor: SecondFactor | null; now: string },
): AccountEvent[] {
  if (!state.userId || !state.twoFactor) return [];
  const t = Date.parse(cmd.now);
  const recent = state.rejectedAt.map(Date.parse).filter((at) => at > t - TWO_FACTOR_OFF_WINDOW_MS);
  if (recent.length >= TWO_FACTOR_OFF_TRIES) {
    const minutes = Math.ceil((Math.min(...recent) + TWO_FACTOR_OFF_WINDOW_MS - t) / 60_000);
    fail(
      'code_locked',
      `Too many wrong codes: try again in ${minutes} ${minutes === 1 ? 'minute' : 'minutes'}.`,
      'code',
    );
  }
  if (!cmd.secondFactor || !unused(state, cmd.secondFactor))
    return [{ type: 'SecondFactorRejected', data: { userId: state.userId, rejectedAt: cmd.now } }];
  return [{ type: 'TwoFactorDisabled', data: { userId: state.userId, disabledAt: cmd.now } }];
}

/**
 * An authenticator or backup code verified an app's step-up: a code of a step used before, or a
 * spent backup code, is refused (two verifications racing with one code: one wins); a backup
 * code is spent by it.
 */
export function decideStepUpFactor(
  state: AccountState,
  cmd: { userId: string; clientId: string; factor: SecondFactor; now: string },
): AccountEvent[] {
  if (!state.twoFactor) fail('two_factor_off', 'Two-factor is off for this account.', 'code');
  proven(state, cmd.factor, 'code');
  const userId = state.userId ?? cmd.userId;
  return [
    {
      type: 'StepUpFactorUsed',
      data: {
        userId,
        clientId: cmd.clientId,
        factor: cmd.factor.kind,
        totpStep: cmd.factor.kind === 'totp' ? cmd.factor.step : null,
        usedAt: cmd.now,
      },
    },
    ...spent(state, userId, cmd.factor, cmd.now),
  ];
}
