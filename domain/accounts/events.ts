import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** A person known to the service, whichever workspaces they are in; the email never changes. */
export const AccountCreated = defineEvent(
  'AccountCreated',
  z.object({
    userId: z.string(),
    email: z.string(),
    name: z.string(),
    image: z.string().nullable(),
    createdAt: z.string(),
  }),
);

/** What a sign-in was proven by: always the mailed code, and a second factor when two-factor is on. */
export const SIGN_IN_FACTORS = ['email_code', 'totp', 'backup_code'] as const;
export type SignInFactor = (typeof SIGN_IN_FACTORS)[number];

/**
 * A session of the service's own pages began. The session id alone opens nothing: the cookie
 * carries it with a MAC under a server key (commands/accounts/codes.ts), and the audit replay
 * prints this event.
 */
export const SignedIn = defineEvent(
  'SignedIn',
  z.object({
    userId: z.string(),
    sessionId: z.string(),
    factors: z.array(z.enum(SIGN_IN_FACTORS)),
    /** The authenticator's time step used, so the same code never opens a second session. */
    totpStep: z.number().int().nullable(),
    signedInAt: z.string(),
    expiresAt: z.string(),
  }),
);

/** The session ended before its time: signed out, or ended by the person from elsewhere. */
export const SignedOut = defineEvent(
  'SignedOut',
  z.object({ userId: z.string(), sessionId: z.string(), signedOutAt: z.string() }),
);

/**
 * Two-factor sign-in turned on, confirmed by a code of the authenticator (its time step kept, so
 * that code cannot sign in too). The authenticator's secret is in the vault, never here; the
 * backup codes are here only as MACs under a server key (commands/accounts/codes.ts), in the
 * order they were shown.
 */
export const TwoFactorEnabled = defineEvent(
  'TwoFactorEnabled',
  z.object({
    userId: z.string(),
    backupCodeHashes: z.array(z.string()),
    totpStep: z.number().int(),
    enabledAt: z.string(),
  }),
);

/** A backup code was spent (by its place in the list); it never works again. */
export const BackupCodeUsed = defineEvent(
  'BackupCodeUsed',
  z.object({ userId: z.string(), index: z.number().int(), usedAt: z.string() }),
);

export const TwoFactorDisabled = defineEvent(
  'TwoFactorDisabled',
  z.object({ userId: z.string(), disabledAt: z.string() }),
);

/** A code given to turn two-factor off was wrong (or used already); five in an hour pause that form. */
export const SecondFactorRejected = defineEvent(
  'SecondFactorRejected',
  z.object({ userId: z.string(), rejectedAt: z.string() }),
);

/**
 * An authenticator or backup code verified an app's step-up (docs/decisions/step-up.md): the
 * authenticator's time step is kept, so the same code neither elevates again nor signs in; a
 * backup code is spent by the `BackupCodeUsed` beside it.
 */
export const StepUpFactorUsed = defineEvent(
  'StepUpFactorUsed',
  z.object({
    userId: z.string(),
    clientId: z.string(),
    factor: z.enum(['totp', 'backup_code']),
    totpStep: z.number().int().nullable(),
    usedAt: z.string(),
  }),
);

export const accountEvents = [
  AccountCreated,
  SignedIn,
  SignedOut,
  TwoFactorEnabled,
  BackupCodeUsed,
  TwoFactorDisabled,
  SecondFactorRejected,
  StepUpFactorUsed,
];
export type AccountEvent =
  | EventOf<typeof AccountCreated>
  | EventOf<typeof SignedIn>
  | EventOf<typeof SignedOut>
  | EventOf<typeof TwoFactorEnabled>
  | EventOf<typeof BackupCodeUsed>
  | EventOf<typeof TwoFactorDisabled>
  | EventOf<typeof SecondFactorRejected>
  | EventOf<typeof StepUpFactorUsed>;

/**
 * One stream per email across the service: appending to it is the reservation that gives an email
 * exactly one account, so two acceptances racing for a new person make one account. The person's
 * sessions and second factor live on it too.
 */
export const accountStream = (email: string) => `service.account-${email.toLowerCase()}`;
