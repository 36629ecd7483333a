import t from 'tap';
import {
  BACKUP_CODE_COUNT,
  decideDisableTwoFactor,
  decideEnableTwoFactor,
  decideOpenAccount,
  decideSignIn,
  decideSignOut,
  decideSignOutEverywhere,
  SESSION_TTL_MS,
} from '../../domain/accounts/decide.ts';
import type { AccountEvent } from '../../domain/accounts/events.ts';
import {
  afterPassed,
  decideCodeRequest,
  judgeAttempt,
  SIGN_IN_CODE_TTL_MS,
  SIGN_IN_CODES_PER_HOUR,
  SIGN_IN_TRIES,
  type SignInChallenge,
} from '../../domain/accounts/sign-in.ts';
import { accountAggregate, type AccountState } from '../../domain/accounts/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();
const given = (events: AccountEvent[]): AccountState =>
  events.reduce(accountAggregate.evolve, accountAggregate.initialState);
const created: AccountEvent = {
  type: 'AccountCreated',
  data: { userId: 'usr_1', email: 'ann@example.com', name: 'ann', image: null, createdAt: NOW },
};
const hashes = Array.from({ length: BACKUP_CODE_COUNT }, (_, i) => `h${i}`);
const enabled: AccountEvent = {
  type: 'TwoFactorEnabled',
  data: { userId: 'usr_1', backupCodeHashes: hashes, totpStep: 100, enabledAt: NOW },
};

t.test('open account: once per email, lower-cased', async (t) => {
  const events = decideOpenAccount(given([]), { userId: 'usr_1', email: 'Ann@Example.com', now: NOW });
  t.match(events, [{ type: 'AccountCreated', data: { email: 'ann@example.com', name: 'ann' } }]);
  t.same(decideOpenAccount(given(events), { userId: 'usr_2', email: 'ann@example.com', now: NOW }), []);
});

t.test('sign in with two-factor off: the mailed code alone opens a session for 14 days', async (t) => {
  const events = decideSignIn(given([created]), { userId: 'usr_1', sessionId: 's1', secondFactor: null, now: NOW });
  t.same(events, [
    {
      type: 'SignedIn',
      data: {
        userId: 'usr_1',
        sessionId: 's1',
        factors: ['email_code'],
        totpStep: null,
        signedInAt: NOW,
        expiresAt: at(SESSION_TTL_MS),
      },
    },
  ]);
  t.equal(
    refusal(() =>
      decideSignIn(given([created]), {
        userId: 'usr_1',
        sessionId: 's1',
        secondFactor: { kind: 'totp', step: 1 },
        now: NOW,
      }),
    ).code,
    'two_factor_off',
  );
});

t.test('an owner from before AccountCreated signs in under the read model id', async (t) => {
  const events = decideSignIn(given([]), { userId: 'usr_old', sessionId: 's1', secondFactor: null, now: NOW });
  t.match(events, [{ type: 'SignedIn', data: { userId: 'usr_old' } }]);
  t.equal(given(events).userId, 'usr_old');
});

t.test('sign in with two-factor on: a second factor is required', async (t) => {
  const state = given([created, enabled]);
  t.equal(
    refusal(() => decideSignIn(state, { userId: 'usr_1', sessionId: 's1', secondFactor: null, now: NOW })).code,
    'two_factor_required',
  );
  const totp = decideSignIn(state, {
    userId: 'usr_1',
    sessionId: 's1',
    secondFactor: { kind: 'totp', step: 101 },
    now: NOW,
  });
  t.match(totp, [{ type: 'SignedIn', data: { factors: ['email_code', 'totp'], totpStep: 101 } }]);
  t.equal(totp.length, 1);
});

t.test('an authenticator code is never accepted twice (its step, or an earlier one)', async (t) => {
  const state = given([created, enabled]);
  t.equal(
    refusal(() =>
      decideSignIn(state, { userId: 'usr_1', sessionId: 's1', secondFactor: { kind: 'totp', step: 100 }, now: NOW }),
    ).code,
    'code_reused',
    'the step that confirmed two-factor',
  );
  const after = given([
    created,
    enabled,
    ...decideSignIn(state, { userId: 'usr_1', sessionId: 's1', secondFactor: { kind: 'totp', step: 105 }, now: NOW }),
  ]);
  for (const step of [104, 105])
    t.equal(
      refusal(() =>
        decideSignIn(after, { userId: 'usr_1', sessionId: 's2', secondFactor: { kind: 'totp', step }, now: NOW }),
      ).code,
      'code_reused',
    );
  t.ok(
    decideSignIn(after, { userId: 'usr_1', sessionId: 's2', secondFactor: { kind: 'totp', step: 106 }, now: NOW })
      .length,
  );
});

t.test('a backup code signs in once and is spent by it', async (t) => {
  const state = given([created, enabled]);
  const events = decideSignIn(state, {
    userId: 'usr_1',
    sessionId: 's1',
    secondFactor: { kind: 'backup_code', hash: 'h3' },
    now: NOW,
  });
  t.match(events, [
    { type: 'SignedIn', data: { factors: ['email_code', 'backup_code'], totpStep: null } },
    { type: 'BackupCodeUsed', data: { userId: 'usr_1', index: 3, usedAt: NOW } },
  ]);
  const after = given([created, enabled, ...events]);
  t.equal(
    refusal(() =>
      decideSignIn(after, {
        userId: 'usr_1',
        sessionId: 's2',
        secondFactor: { kind: 'backup_code', hash: 'h3' },
        now: NOW,
      }),
    ).code,
    'code_invalid',
  );
  t.equal(
    refusal(() =>
      decideSignIn(after, {
        userId: 'usr_1',
        sessionId: 's2',
        secondFactor: { kind: 'backup_code', hash: 'nope' },
        now: NOW,
      }),
    ).code,
    'code_invalid',
  );
  t.ok(
    decideSignIn(after, {
      userId: 'usr_1',
      sessionId: 's2',
      secondFactor: { kind: 'backup_code', hash: 'h4' },
      now: NOW,
    }).length,
  );
});

t.test('sign out ends an open session once', async (t) => {
  const signedIn = decideSignIn(given([created]), { userId: 'usr_1', sessionId: 's1', secondFactor: null, now: NOW });
  const state = given([created, ...signedIn]);
  const out = decideSignOut(state, { sessionId: 's1', now: at(1000) });
  t.same(out, [{ type: 'SignedOut', data: { userId: 'usr_1', sessionId: 's1', signedOutAt: at(1000) } }]);
  t.same(decideSignOut(given([created, ...signedIn, ...out]), { sessionId: 's1', now: at(2000) }), []);
  t.same(decideSignOut(state, { sessionId: 'other', now: at(2000) }), []);
});

t.test('sign out everywhere ends every live session, not the ended or expired ones', async (t) => {
  const sessions = ['s1', 's2', 's3'].flatMap((sessionId, i) =>
    decideSignIn(given([created]), { userId: 'usr_1', sessionId, secondFactor: null, now: at(i * SESSION_TTL_MS) }),
  );
  const out = decideSignOut(given([created, ...sessions]), { sessionId: 's3', now: at(2 * SESSION_TTL_MS) });
  const state = given([created, ...sessions, ...out]);
  t.same(decideSignOutEverywhere(state, { now: at(SESSION_TTL_MS + 1) }), [
    { type: 'SignedOut', data: { userId: 'usr_1', sessionId: 's2', signedOutAt: at(SESSION_TTL_MS + 1) } },
  ]);
  t.same(decideSignOutEverywhere(given([]), { now: NOW }), []);
});

t.test('two-factor on: confirmed by a fresh step, ten distinct backup codes, not twice', async (t) => {
  const events = decideEnableTwoFactor(given([created]), { totpStep: 7, backupCodeHashes: hashes, now: NOW });
  t.same(events, [
    { type: 'TwoFactorEnabled', data: { userId: 'usr_1', backupCodeHashes: hashes, totpStep: 7, enabledAt: NOW } },
  ]);
  t.equal(
    refusal(() =>
      decideEnableTwoFactor(given([created, ...events]), { totpStep: 8, backupCodeHashes: hashes, now: NOW }),
    ).code,
    'two_factor_on',
  );
  t.equal(
    refusal(() => decideEnableTwoFactor(given([]), { totpStep: 8, backupCodeHashes: hashes, now: NOW })).code,
    'account_not_found',
  );
  t.throws(
    () => decideEnableTwoFactor(given([created]), { totpStep: 8, backupCodeHashes: hashes.slice(1), now: NOW }),
    RangeError,
  );
  const signedIn = decideSignIn(given([created]), { userId: 'usr_1', sessionId: 's', secondFactor: null, now: NOW });
  t.same(given([created, ...signedIn]).lastTotpStep, null);
});

t.test('two-factor off: proven by an unused second factor; off already decides nothing', async (t) => {
  const state = given([created, enabled]);
  const rejected = [{ type: 'SecondFactorRejected', data: { userId: 'usr_1', rejectedAt: NOW } }];
  t.same(
    decideDisableTwoFactor(state, { secondFactor: { kind: 'totp', step: 99 }, now: NOW }),
    rejected,
    'a used step',
  );
  t.same(decideDisableTwoFactor(state, { secondFactor: { kind: 'backup_code', hash: 'x' }, now: NOW }), rejected);
  t.same(decideDisableTwoFactor(state, { secondFactor: null, now: NOW }), rejected, 'no code at all');
  const off = decideDisableTwoFactor(state, { secondFactor: { kind: 'backup_code', hash: 'h0' }, now: NOW });
  t.same(off, [{ type: 'TwoFactorDisabled', data: { userId: 'usr_1', disabledAt: NOW } }]);
  const after = given([created, enabled, ...off]);
  t.equal(after.twoFactor, null);
  t.equal(after.lastTotpStep, null, 'the next secret starts afresh');
  t.same(decideDisableTwoFactor(after, { secondFactor: { kind: 'totp', step: 200 }, now: NOW }), []);
  t.ok(
    decideSignIn(after, { userId: 'usr_1', sessionId: 's', secondFactor: null, now: NOW }).length,
    'the mailed code alone again',
  );
});

t.test('five wrong codes in an hour pause turning two-factor off, then it works again', async (t) => {
  const rejections: AccountEvent[] = [0, 10, 20, 30, 40].map((m) => ({
    type: 'SecondFactorRejected',
    data: { userId: 'usr_1', rejectedAt: at(m * 60_000) },
  }));
  const state = given([created, enabled, ...rejections]);
  const right = { kind: 'backup_code', hash: 'h1' } as const;
  const locked = refusal(() => decideDisableTwoFactor(state, { secondFactor: right, now: at(50 * 60_000) }));
  t.equal(locked.code, 'code_locked');
  t.match(locked.message, 'try again in 10 minutes');
  t.equal(given([created, enabled, ...rejections.slice(1)]).rejectedAt.length, 4);
  t.same(
    decideDisableTwoFactor(state, { secondFactor: right, now: at(60 * 60_000) }),
    [{ type: 'TwoFactorDisabled', data: { userId: 'usr_1', disabledAt: at(60 * 60_000) } }],
    'the oldest left the hour',
  );
});

t.test('codes per email: five in an hour, the sixth told when the oldest leaves the hour', async (t) => {
  const four = [at(-50 * 60_000), at(-40 * 60_000), at(-30 * 60_000), at(-1000)];
  t.same(decideCodeRequest(four, NOW), { allowed: true, expiresAt: at(SIGN_IN_CODE_TTL_MS) });
  const five = [...four, at(-61 * 60_000), at(-2000)];
  t.equal(SIGN_IN_CODES_PER_HOUR, 5);
  t.same(
    decideCodeRequest(five, NOW),
    { allowed: false, retryAfterSeconds: 10 * 60 },
    'older than an hour does not count',
  );
  t.same(decideCodeRequest([...five.slice(1)], NOW), { allowed: true, expiresAt: at(SIGN_IN_CODE_TTL_MS) });
});

const challenge = (o: Partial<SignInChallenge> = {}): SignInChallenge => ({
  id: 'c1',
  email: 'ann@example.com',
  userId: 'usr_1',
  stage: 'email_code',
  tries: 0,
  expiresAt: at(SIGN_IN_CODE_TTL_MS),
  ...o,
});

t.test('answers: right passes, wrong counts down, the fifth wrong locks even the right code', async (t) => {
  t.same(judgeAttempt(challenge(), 'email_code', true, NOW), { outcome: 'passed' });
  let c = challenge();
  for (let i = 1; i <= SIGN_IN_TRIES; i++) {
    const a = judgeAttempt(c, 'email_code', false, NOW);
    t.match(a, { outcome: 'wrong', triesLeft: SIGN_IN_TRIES - i });
    if (a.outcome === 'wrong') c = a.next;
  }
  t.same(judgeAttempt(c, 'email_code', true, NOW), { outcome: 'locked' });
});

t.test('answers: expired, used up, another step, none, and an unknown email never passes', async (t) => {
  t.same(judgeAttempt(challenge(), 'email_code', true, at(SIGN_IN_CODE_TTL_MS)), { outcome: 'expired' });
  t.same(judgeAttempt(challenge({ stage: 'done' }), 'email_code', true, NOW), { outcome: 'expired' });
  t.same(judgeAttempt(challenge(), 'second_factor', true, NOW), { outcome: 'expired' });
  t.same(judgeAttempt(undefined, 'email_code', true, NOW), { outcome: 'expired' });
  t.match(judgeAttempt(challenge({ userId: null }), 'email_code', true, NOW), { outcome: 'wrong', triesLeft: 4 });
});

t.test('after the mailed code: the second step with tries and time of its own, or done', async (t) => {
  const later = at(5 * 60_000);
  t.same(
    afterPassed(challenge({ tries: 3 }), true, later),
    challenge({ stage: 'second_factor', tries: 0, expiresAt: at(15 * 60_000) }),
  );
  t.same(afterPassed(challenge({ tries: 3 }), false, later), challenge({ tries: 3, stage: 'done' }));
  t.same(afterPassed(challenge({ stage: 'second_factor' }), true, later).stage, 'done');
});
