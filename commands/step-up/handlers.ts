import crypto from 'node:crypto';
import { decideStepUpFactor, type SecondFactor } from '../../domain/accounts/decide.ts';
import { accountStream } from '../../domain/accounts/events.ts';
import { accountAggregate, type AccountState } from '../../domain/accounts/state.ts';
import { DomainError, fail } from '../../domain/shared/errors.ts';
import {
  decideChallenge,
  ELEVATION_MS,
  judgeCode,
  maskEmail,
  STEP_UP_CODE_TTL_MS,
  type StepUpChallenge,
  type StepUpMethod,
} from '../../domain/step-up/rules.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import type { StepUpStore } from '../../infra/step-up/port.ts';
import { type AccountPorts, personActor, secondFactorOf, totpSecretId } from '../accounts/sign-in.ts';
import { execute, loadState, type CommandContext } from '../execute.ts';

/** What step-up reaches outside the event store; built once in `openSystem`. */
export interface StepUpPorts {
  store: StepUpStore;
  accounts: AccountPorts;
  /** The mail port the sign-in codes go through, and their sender and public address. */
  mail: MailSender;
  from: string;
  publicUrl: string;
  /** The person's email (the accounts read model). */
  emailOf(userId: string): Promise<string | undefined>;
}

/** The app asking, and the person whose approval its token stands on. */
export interface StepUpCaller {
  clientId: string;
  userId: string;
}

/** A refusal that passes with time (429): `Retry-After` says when to ask again. */
export class StepUpWait extends DomainError {
  constructor(
    code: 'step_up_throttled' | 'step_up_locked',
    message: string,
    override readonly retryAfterSeconds: number,
  ) {
    super(code, message, null);
  }
}

const minutes = (s: number) => `${Math.ceil(s / 60)} ${Math.ceil(s / 60) === 1 ? 'minute' : 'minutes'}`;

async function person(ctx: CommandContext, ports: StepUpPorts, userId: string) {
  const email = await ports.emailOf(userId);
  if (!email) throw new Error(`step-up: no account ${userId}`);
  const { state } = await loadState(ctx, accountStream(email), accountAggregate);
  return { email, state };
}

export interface StepUpStatus {
  object: 'step_up';
  elevated: boolean;
  elevatedUntil: string | null;
  method: StepUpMethod;
  minutes: number;
}

/** Where the app stands: elevated or not, and the method a code comes by (the authenticator when two-factor is on). */
export async function stepUpStatus(
  ctx: CommandContext,
  ports: StepUpPorts,
  caller: StepUpCaller,
  elevatedUntil: string | null,
  now: string,
): Promise<StepUpStatus> {
  const { state } = await person(ctx, ports, caller.userId);
  const elevated = elevatedUntil !== null && Date.parse(elevatedUntil) > Date.parse(now);
  return {
    object: 'step_up',
    elevated,
    elevatedUntil: elevated ? elevatedUntil : null,
    method: state.twoFactor ? 'totp' : 'email',
    minutes: ELEVATION_MS / 60_000,
  };
}

export interface StepUpChallengeView {
  object: 'step_up_challenge';
  method: StepUpMethod;
  reused: boolean;
  sentTo?: string;
}

/**
 * A challenge for the app and person (domain/step-up/rules.ts `decideChallenge`). An email code
 * is mailed inside the person's turn, before the answer: a mail the server does not take leaves
 * no code waiting (the earlier one ended too) and counts against nothing, answered 503.
 */
export async function askStepUp(
  ctx: CommandContext,
  ports: StepUpPorts,
  caller: StepUpCaller,
  input: { method?: StepUpMethod | undefined; resend: boolean },
  now: string,
): Promise<StepUpChallengeView> {
  const { email, state } = await person(ctx, ports, caller.userId);
  const method = input.method ?? (state.twoFactor ? 'totp' : 'email');
  if (method === 'totp' && !state.twoFactor)
    fail('invalid_parameter', 'Two-factor is off for this person: their codes come by email.', 'method');
  const view = (reused: boolean): StepUpChallengeView => ({
    object: 'step_up_challenge',
    method,
    reused,
    ...(method === 'email' ? { sentTo: maskEmail(email) } : {}),
  });
  const outcome = await ports.store.turn(caller.userId, async (turn) => {
    const decision = decideChallenge(await turn.seen(caller.clientId), {
      ...caller,
      method,
      resend: input.resend,
      now,
    });
    switch (decision.outcome) {
      case 'locked':
        throw new StepUpWait(
          'step_up_locked',
          `Too many wrong codes: verification is paused for ${minutes(decision.retryAfterSeconds)}.`,
          decision.retryAfterSeconds,
        );
      case 'throttled':
        throw new StepUpWait(
          'step_up_throttled',
          `Too many codes asked for: ask again in ${minutes(decision.retryAfterSeconds)}.`,
          decision.retryAfterSeconds,
        );
      case 'reused':
        return 'reused';
    }
    const challenge: StepUpChallenge = {
      id: crypto.randomBytes(18).toString('base64url'),
      ...caller,
      method,
      tries: 0,
      expiresAt: decision.expiresAt,
      createdAt: now,
    };
    await turn.open(challenge);
    if (method === 'totp') return 'new';
    try {
      await ports.mail.send(stepUpMail(ports, email, ports.accounts.codes.stepUpCode(challenge.id)));
      return 'new';
    } catch {
      // Inside the turn, so the earlier code stays ended and this one is never seen waiting. The
      // mail server's answer is not the app's to read.
      await turn.withdraw(challenge.id);
      return 'undeliverable';
    }
  });
  if (outcome === 'undeliverable')
    fail('step_up_undeliverable', 'The code could not be mailed; no code is waiting. Ask again later.');
  return view(outcome === 'reused');
}

function stepUpMail(ports: StepUpPorts, to: string, code: string) {
  return {
    from: ports.from,
    to: [to],
    subject: `${code} is your verification code`,
    text:
      `An app you connected to the Workspace Mail Service asked to make a sensitive change for you. Your code is:\n\n` +
      `    ${code}\n\n` +
      `It works for ${STEP_UP_CODE_TTL_MS / 60_000} minutes and lets that app make such changes for ` +
      `${ELEVATION_MS / 60_000} minutes. If you did not ask for it, ignore this mail, and see your connected apps at ` +
      `${new URL('/account/connected-apps', ports.publicUrl).href}.\n`,
    headers: { 'Auto-Submitted': 'auto-generated' },
  };
}

/**
 * A code for the app's waiting challenge (domain/step-up/rules.ts `judgeCode`), judged in the
 * person's turn. A matching authenticator or backup code is recorded on the account after the
 * turn (an append waits for the read models, never inside a transaction): of two racing with
 * one code, the second is refused there. Then the app is elevated for the person.
 */
export async function verifyStepUp(
  ctx: CommandContext,
  ports: StepUpPorts,
  caller: StepUpCaller,
  code: string,
  now: string,
): Promise<StepUpStatus> {
  const { email, state } = await person(ctx, ports, caller.userId);
  const { judged, factor, method } = await ports.store.turn(caller.userId, async (turn) => {
    const seen = await turn.seen(caller.clientId);
    const waiting = seen.latest;
    const factor = waiting?.method === 'totp' ? await authenticatorFactor(ports, caller, state, code, now) : null;
    const matches = waiting?.method === 'email' ? ports.accounts.codes.isStepUpCode(waiting.id, code) : factor !== null;
    const judged = judgeCode(seen, caller.clientId, matches, now);
    if (judged.outcome === 'wrong') await turn.wrong(waiting!, judged.tries, now);
    if (judged.outcome === 'passed') await turn.use(waiting!.id, now);
    return { judged, factor, method: waiting?.method ?? 'email' };
  });
  switch (judged.outcome) {
    case 'locked':
      if (judged.retryAfterSeconds === null)
        fail('step_up_locked', 'Five wrong tries at this code: ask for a new one (`resend`).', 'code');
      throw new StepUpWait(
        'step_up_locked',
        `Too many wrong codes: verification is paused for ${minutes(judged.retryAfterSeconds)}.`,
        judged.retryAfterSeconds,
      );
    case 'expired':
      fail('step_up_code_expired', 'No code is waiting: ask for one with POST /security/step-up.', 'code');
      break;
    case 'wrong':
      fail(
        'step_up_code_invalid',
        judged.triesLeft === 0
          ? 'Wrong code: no tries left at this code; ask for a new one.'
          : `Wrong code: ${judged.triesLeft} ${judged.triesLeft === 1 ? 'try' : 'tries'} left.`,
        'code',
      );
  }
  if (factor) {
    try {
      await execute(ctx, personActor(caller.userId), accountStream(email), accountAggregate, (s) =>
        decideStepUpFactor(s, { ...caller, factor, now }),
      );
    } catch (error) {
      if (!(error instanceof DomainError)) throw error;
      fail('step_up_code_expired', 'That code was used already: ask for a new challenge.', 'code');
    }
  }
  const elevatedUntil = await ports.store.elevate(caller.clientId, caller.userId, judged.elevatedUntil);
  return { object: 'step_up', elevated: true, elevatedUntil, method, minutes: ELEVATION_MS / 60_000 };
}

/** An unused authenticator or backup code of the person, or null. */
function authenticatorFactor(
  ports: StepUpPorts,
  caller: StepUpCaller,
  state: AccountState,
  code: string,
  now: string,
): Promise<SecondFactor | null> {
  if (!state.twoFactor) return Promise.resolve(null);
  return secondFactorOf(ports.accounts, totpSecretId(caller.userId), code, now, state);
}

/**
 * The person chose "Allow changes for 60 minutes" for an app on the connected-apps page: the
 * session there is the proof, no code is asked.
 */
export async function allowChanges(ports: StepUpPorts, caller: StepUpCaller, now: string): Promise<string> {
  return ports.store.elevate(caller.clientId, caller.userId, new Date(Date.parse(now) + ELEVATION_MS).toISOString());
}
