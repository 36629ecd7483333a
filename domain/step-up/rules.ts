/**
 * The rules of step-up verification for OAuth apps (spec: Authentication, Step-up): a person's
 * code, asked for by an app and verified by it, elevates that app for that person for 60
 * minutes. Challenges, wrong codes and elevations are short-lived rows, not events
 * (docs/decisions/step-up.md); these functions are the whole of what is decided about them.
 */

/** A code works this long after it was asked for. */
export const STEP_UP_CODE_TTL_MS = 10 * 60_000;
/** A verified code elevates the app for the person this long. */
export const ELEVATION_MS = 60 * 60_000;
/** Wrong codes that lock one challenge. */
export const STEP_UP_TRIES = 5;
/** New challenges per app per person: per hour, and per 24 hours. */
export const CHALLENGES_PER_HOUR = 5;
export const CHALLENGES_PER_DAY = 20;
/** Wrong codes in 24 hours that pause verification: from one app, and from all the person's apps. */
export const WRONG_CODES_PER_APP = 10;
export const WRONG_CODES_PER_PERSON = 20;

const HOUR_MS = 3_600_000;
export const DAY_MS = 24 * HOUR_MS;

export type StepUpMethod = 'email' | 'totp';

export interface StepUpChallenge {
  id: string;
  clientId: string;
  userId: string;
  method: StepUpMethod;
  /** Wrong codes given to it. */
  tries: number;
  expiresAt: string;
  createdAt: string;
}

/** A wrong code given by one of the person's apps, and when. */
export interface WrongCode {
  clientId: string;
  at: string;
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

/**
 * When the `limit`-th newest of `times` leaves a window of `windowMs` (a new one is allowed
 * then), or null while fewer than `limit` are inside it.
 */
function freedIn(times: number[], limit: number, windowMs: number, now: number): number | null {
  const inside = times.filter((at) => at > now - windowMs).sort((a, b) => b - a);
  if (inside.length < limit) return null;
  return inside[limit - 1]! + windowMs - now;
}

/**
 * Seconds until the person may verify again: 10 wrong codes in 24 hours from this app, or 20 from
 * all their apps, pause verification until the oldest that counts leaves the 24 hours. Null:
 * not paused.
 */
export function pausedFor(wrong: WrongCode[], clientId: string, now: string): number | null {
  const t = Date.parse(now);
  const all = wrong.map((w) => Date.parse(w.at));
  const mine = wrong.filter((w) => w.clientId === clientId).map((w) => Date.parse(w.at));
  const waits = [freedIn(mine, WRONG_CODES_PER_APP, DAY_MS, t), freedIn(all, WRONG_CODES_PER_PERSON, DAY_MS, t)];
  const wait = Math.max(...waits.map((w) => w ?? 0));
  return wait > 0 ? seconds(wait) : null;
}

/** Whether a challenge still takes codes: not expired, not locked. */
export const isWaiting = (c: StepUpChallenge, now: string) =>
  Date.parse(c.expiresAt) > Date.parse(now) && c.tries < STEP_UP_TRIES;

export interface ChallengeAsk {
  clientId: string;
  userId: string;
  method: StepUpMethod;
  /** A new code even when one is waiting. */
  resend: boolean;
  now: string;
}

export interface Seen {
  /** When this app asked this person for challenges in the last 24 hours. */
  created: string[];
  /** The person's wrong codes of the last 24 hours, from every app. */
  wrong: WrongCode[];
  /** The app's latest challenge for the person that has not been used or replaced. */
  latest: StepUpChallenge | undefined;
}

export type ChallengeDecision =
  | { outcome: 'reused'; challenge: StepUpChallenge }
  | { outcome: 'new'; expiresAt: string }
  | { outcome: 'throttled'; retryAfterSeconds: number }
  | { outcome: 'locked'; retryAfterSeconds: number };

/**
 * A challenge for an app and a person. The one waiting (same method, still taking codes) is
 * reused unless `resend` asks for a new one; reusing counts against nothing. A new one counts
 * against 5 per hour and 20 per 24 hours; while verification is paused none is made, since no
 * code could be verified.
 */
export function decideChallenge(seen: Seen, ask: ChallengeAsk): ChallengeDecision {
  const paused = pausedFor(seen.wrong, ask.clientId, ask.now);
  if (paused !== null) return { outcome: 'locked', retryAfterSeconds: paused };
  const waiting = seen.latest;
  if (!ask.resend && waiting && waiting.method === ask.method && isWaiting(waiting, ask.now))
    return { outcome: 'reused', challenge: waiting };
  const t = Date.parse(ask.now);
  const created = seen.created.map(Date.parse);
  const wait = Math.max(
    freedIn(created, CHALLENGES_PER_HOUR, HOUR_MS, t) ?? 0,
    freedIn(created, CHALLENGES_PER_DAY, DAY_MS, t) ?? 0,
  );
  if (wait > 0) return { outcome: 'throttled', retryAfterSeconds: seconds(wait) };
  return { outcome: 'new', expiresAt: new Date(t + STEP_UP_CODE_TTL_MS).toISOString() };
}

export type CodeJudgement =
  | { outcome: 'locked'; retryAfterSeconds: number | null }
  /** No challenge waiting: never asked, too old, used, or replaced. */
  | { outcome: 'expired' }
  | { outcome: 'passed'; elevatedUntil: string }
  | { outcome: 'wrong'; triesLeft: number; tries: number };

/**
 * A code given for the app's latest challenge. A paused person, or a challenge with five wrong
 * codes, is refused even the right code; a wrong code counts against the challenge and the
 * person's 24 hours.
 */
export function judgeCode(
  seen: Pick<Seen, 'wrong' | 'latest'>,
  clientId: string,
  matches: boolean,
  now: string,
): CodeJudgement {
  const paused = pausedFor(seen.wrong, clientId, now);
  if (paused !== null) return { outcome: 'locked', retryAfterSeconds: paused };
  const c = seen.latest;
  if (!c || Date.parse(c.expiresAt) <= Date.parse(now)) return { outcome: 'expired' };
  if (c.tries >= STEP_UP_TRIES) return { outcome: 'locked', retryAfterSeconds: null };
  if (matches) return { outcome: 'passed', elevatedUntil: new Date(Date.parse(now) + ELEVATION_MS).toISOString() };
  const tries = c.tries + 1;
  return { outcome: 'wrong', tries, triesLeft: STEP_UP_TRIES - tries };
}

/** An address as a step-up answer shows it: the first letter of the local part and the domain. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return `${email.slice(0, 1)}***${email.slice(at)}`;
}
