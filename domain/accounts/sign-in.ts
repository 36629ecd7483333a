/**
 * The rules of signing in to our pages by a mailed code. A challenge is asked for by email, known
 * or not, and behaves the same either way (no account enumeration): an unknown email's challenge
 * is never mailed and no code matches it. Challenges are short-lived rows, not events
 * (docs/decisions/accounts.md); these functions are the whole of what is decided about them.
 */

/** A mailed code, and the second step after it, work this long. */
export const SIGN_IN_CODE_TTL_MS = 10 * 60_000;
/** Wrong answers that lock a challenge (at each of its steps). */
export const SIGN_IN_TRIES = 5;
/** Codes one email may be sent per hour. */
export const SIGN_IN_CODES_PER_HOUR = 5;
const HOUR_MS = 3_600_000;

export type ChallengeStage = 'email_code' | 'second_factor' | 'done';

export interface SignInChallenge {
  id: string;
  email: string;
  /** Null for an email with no account: nothing will match. */
  userId: string | null;
  stage: ChallengeStage;
  /** Wrong answers at this stage. */
  tries: number;
  expiresAt: string;
}

export type CodeRequest = { allowed: true; expiresAt: string } | { allowed: false; retryAfterSeconds: number };

/**
 * A new code for an email, unless it was asked for `SIGN_IN_CODES_PER_HOUR` times in the last
 * hour (`recent`: when each earlier one was asked, any order); then, when the oldest of them
 * leaves the hour.
 */
export function decideCodeRequest(recent: string[], now: string): CodeRequest {
  const t = Date.parse(now);
  const inHour = recent.map(Date.parse).filter((at) => at > t - HOUR_MS);
  if (inHour.length < SIGN_IN_CODES_PER_HOUR)
    return { allowed: true, expiresAt: new Date(t + SIGN_IN_CODE_TTL_MS).toISOString() };
  const freed = [...inHour].sort((a, b) => b - a)[SIGN_IN_CODES_PER_HOUR - 1]! + HOUR_MS;
  return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((freed - t) / 1000)) };
}

export type Attempt =
  | { outcome: 'passed' }
  | { outcome: 'wrong'; triesLeft: number; next: SignInChallenge }
  /** Locked by earlier wrong answers: even the right code is refused. */
  | { outcome: 'locked' }
  /** Too old, used already, or at another step: nothing is waiting for this answer. */
  | { outcome: 'expired' };

/** An answer at `stage` of a challenge; `matches` is whether it was the right code. */
export function judgeAttempt(
  challenge: SignInChallenge | undefined,
  stage: Exclude<ChallengeStage, 'done'>,
  matches: boolean,
  now: string,
): Attempt {
  if (!challenge || challenge.stage !== stage || Date.parse(challenge.expiresAt) <= Date.parse(now))
    return { outcome: 'expired' };
  if (challenge.tries >= SIGN_IN_TRIES) return { outcome: 'locked' };
  if (matches && challenge.userId !== null) return { outcome: 'passed' };
  const tries = challenge.tries + 1;
  return { outcome: 'wrong', triesLeft: SIGN_IN_TRIES - tries, next: { ...challenge, tries } };
}

/**
 * After a passed step: the second factor, with tries and time of its own, when the account has
 * two-factor on; else the challenge is used up.
 */
export function afterPassed(challenge: SignInChallenge, secondFactor: boolean, now: string): SignInChallenge {
  if (challenge.stage === 'email_code' && secondFactor)
    return {
      ...challenge,
      stage: 'second_factor',
      tries: 0,
      expiresAt: new Date(Date.parse(now) + SIGN_IN_CODE_TTL_MS).toISOString(),
    };
  return { ...challenge, stage: 'done' };
}
