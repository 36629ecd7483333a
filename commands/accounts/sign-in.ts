import crypto from 'node:crypto';
import { verify } from 'otplib';
import {
  decideSignIn,
  decideSignOut,
  decideSignOutEverywhere,
  type SecondFactor,
} from '../../domain/accounts/decide.ts';
import { accountStream } from '../../domain/accounts/events.ts';
import {
  afterPassed,
  type Attempt,
  decideCodeRequest,
  judgeAttempt,
  type SignInChallenge,
} from '../../domain/accounts/sign-in.ts';
import { accountAggregate, type AccountState } from '../../domain/accounts/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import type { SecretStore } from '../../infra/secrets/port.ts';
import type { SignInChallengeStore } from '../../infra/sign-in/port.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import type { AccountCodes } from './codes.ts';

/** What a person's sign-in reaches outside the event store; built once in `openSystem`. */
export interface AccountPorts {
  challenges: SignInChallengeStore;
  /** The vault: authenticator secrets, encrypted at rest. */
  secrets: SecretStore;
  codes: AccountCodes;
  /** The account an email has (the members read model), or none. */
  findAccount(email: string): Promise<{ userId: string } | undefined>;
}

/** Events of a person's own doing carry no workspace: they are the person's, not a workspace's. */
export const personActor = (userId: string | null, requestId?: string): Actor => ({
  workspaceId: '',
  kind: 'person',
  id: userId,
  ...(requestId ? { requestId } : {}),
});

/** The vault's names of a person's authenticator secret, and of one being set up. */
export const totpSecretId = (userId: string) => `account-totp:${userId}`;
export const totpSetupId = (userId: string) => `account-totp-setup:${userId}`;

export const normalEmail = (email: string) => email.trim().toLowerCase();

export type CodeAsked = { challengeId: string } | { retryAfterSeconds: number };

/**
 * Asks for a sign-in code. Every email gets a challenge, throttled alike, so the answer never
 * tells whether it has an account; only an account's is mailed (later, by the mail process: the
 * request takes the same time either way).
 */
export async function askSignInCode(ports: AccountPorts, emailInput: string, now: string): Promise<CodeAsked> {
  const email = normalEmail(emailInput);
  const account = await ports.findAccount(email);
  return ports.challenges.issue<CodeAsked>(email, (recent) => {
    const request = decideCodeRequest(recent, now);
    if (!request.allowed) return { result: { retryAfterSeconds: request.retryAfterSeconds } };
    const challenge: SignInChallenge = {
      id: crypto.randomBytes(18).toString('base64url'),
      email,
      userId: account?.userId ?? null,
      stage: 'email_code',
      tries: 0,
      expiresAt: request.expiresAt,
    };
    return { result: { challengeId: challenge.id }, challenge, mail: account !== undefined };
  });
}

export type Answered =
  | { outcome: 'signed_in'; token: string; expiresAt: string }
  | { outcome: 'second_factor' }
  | Exclude<Attempt, { outcome: 'passed' }>;

/** What an answer passed with: the session to begin once the challenge is stored as used. */
type Judged =
  | Exclude<Answered, { outcome: 'signed_in' }>
  | { outcome: 'passed'; challenge: SignInChallenge; factor: SecondFactor | null };

/**
 * Begins a session (the account's stream decides). Outside the challenge's transaction: an
 * append waits for the read models, which follow the log only past transactions that ended.
 * Losing a race for the same backup code or authenticator step (refused by the decider) leaves
 * the used challenge with nothing opened: the person asks again.
 */
async function signIn(ctx: CommandContext, ports: AccountPorts, judged: Judged, now: string): Promise<Answered> {
  if (judged.outcome !== 'passed') return judged;
  const { challenge, factor } = judged;
  const userId = challenge.userId!;
  const sessionId = crypto.randomBytes(18).toString('base64url');
  try {
    const { events } = await execute(ctx, personActor(userId), accountStream(challenge.email), accountAggregate, (s) =>
      decideSignIn(s, { userId, sessionId, secondFactor: factor, now }),
    );
    const signedIn = events.find((e) => e.type === 'SignedIn')!;
    return { outcome: 'signed_in', token: ports.codes.sessionToken(sessionId), expiresAt: signedIn.data.expiresAt };
  } catch (error) {
    if (error instanceof DomainError) return { outcome: 'expired' };
    throw error;
  }
}

/**
 * The mailed code's answer: with two-factor off it signs in; with it on, the challenge moves to
 * its second step. A wrong answer counts against the challenge; five lock it.
 */
export async function answerSignInCode(
  ctx: CommandContext,
  ports: AccountPorts,
  challengeId: string,
  code: string,
  now: string,
): Promise<Answered> {
  const judged = await ports.challenges.answer<Judged>(challengeId, async (challenge) => {
    const matches = challenge !== undefined && ports.codes.isSignInCode(challenge.id, code);
    const attempt = judgeAttempt(challenge, 'email_code', matches, now);
    if (attempt.outcome === 'wrong') return { result: attempt, next: attempt.next };
    if (attempt.outcome !== 'passed') return { result: attempt };
    const passed = challenge!;
    const { state } = await loadState(ctx, accountStream(passed.email), accountAggregate);
    const next = afterPassed(passed, state.twoFactor !== null, now);
    if (next.stage === 'second_factor') return { result: { outcome: 'second_factor' }, next };
    return { result: { outcome: 'passed', challenge: passed, factor: null }, next };
  });
  return signIn(ctx, ports, judged, now);
}

/**
 * Which second factor `code` is, if any: six digits are an authenticator code of the secret in the
 * vault (its time step, a step either side allowed for clocks apart), anything else a backup
 * code's MAC. With `state`, only a factor it has not used counts (the decider checks again).
 */
export async function secondFactorOf(
  ports: AccountPorts,
  secretId: string,
  code: string,
  now: string,
  state?: AccountState,
): Promise<SecondFactor | null> {
  const typed = code.replace(/\s+/g, '');
  if (/^\d{6}$/.test(typed)) {
    const secret = await ports.secrets.get(secretId);
    if (!secret) return null;
    const result = await verify({
      secret,
      token: typed,
      epoch: Math.floor(Date.parse(now) / 1000),
      epochTolerance: 30,
      ...(state?.lastTotpStep != null ? { afterTimeStep: state.lastTotpStep } : {}),
    });
    return result.valid && 'timeStep' in result ? { kind: 'totp', step: result.timeStep } : null;
  }
  if (typed === '') return null;
  const hash = ports.codes.backupCodeHash(typed);
  if (state && !state.twoFactor?.backupCodes.includes(hash)) return null;
  return { kind: 'backup_code', hash };
}

/** The second step: an unused authenticator or backup code of the account. */
export async function answerSecondFactor(
  ctx: CommandContext,
  ports: AccountPorts,
  challengeId: string,
  code: string,
  now: string,
): Promise<Answered> {
  const judged = await ports.challenges.answer<Judged>(challengeId, async (challenge) => {
    let factor: SecondFactor | null = null;
    if (challenge?.userId && challenge.stage === 'second_factor') {
      const { state } = await loadState(ctx, accountStream(challenge.email), accountAggregate);
      factor = await secondFactorOf(ports, totpSecretId(challenge.userId), code, now, state);
    }
    const attempt = judgeAttempt(challenge, 'second_factor', factor !== null, now);
    if (attempt.outcome === 'wrong') return { result: attempt, next: attempt.next };
    if (attempt.outcome !== 'passed') return { result: attempt };
    return { result: { outcome: 'passed', challenge: challenge!, factor }, next: afterPassed(challenge!, true, now) };
  });
  return signIn(ctx, ports, judged, now);
}

/** Ends a session; ending one already ended changes nothing. */
export async function signOut(
  ctx: CommandContext,
  session: { userId: string; email: string; sessionId: string },
  now: string,
): Promise<void> {
  await execute(ctx, personActor(session.userId), accountStream(session.email), accountAggregate, (s) =>
    decideSignOut(s, { sessionId: session.sessionId, now }),
  );
}

/** Ends every live session of the person, this one included (a lost device, a shared machine). */
export async function signOutEverywhere(
  ctx: CommandContext,
  session: { userId: string; email: string },
  now: string,
): Promise<void> {
  await execute(ctx, personActor(session.userId), accountStream(session.email), accountAggregate, (s) =>
    decideSignOutEverywhere(s, { now }),
  );
}
