import t from 'tap';
import { BACKUP_CODE_COUNT, decideStepUpFactor } from '../../domain/accounts/decide.ts';
import type { AccountEvent } from '../../domain/accounts/events.ts';
import { accountAggregate, type AccountState } from '../../domain/accounts/state.ts';
import {
  CHALLENGES_PER_DAY,
  CHALLENGES_PER_HOUR,
  decideChallenge,
  ELEVATION_MS,
  judgeCode,
  maskEmail,
  pausedFor,
  type Seen,
  STEP_UP_CODE_TTL_MS,
  STEP_UP_TRIES,
  type StepUpChallenge,
  type WrongCode,
} from '../../domain/step-up/rules.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-01-01T12:00:00.000Z';
const at = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();
const MIN = 60_000;
const HOUR = 60 * MIN;
const ask = { clientId: 'app_a', userId: 'usr_1', method: 'email' as const, resend: false, now: NOW };
const waiting = (over: Partial<StepUpChallenge> = {}): StepUpChallenge => ({
  id: 'c1',
  clientId: 'app_a',
  userId: 'usr_1',
  method: 'email',
  tries: 0,
  expiresAt: at(5 * MIN),
  createdAt: at(-5 * MIN),
  ...over,
});
const seen = (over: Partial<Seen> = {}): Seen => ({ created: [], wrong: [], latest: undefined, ...over });
const wrongCodes = (n: number, clientId: string, ago: number): WrongCode[] =>
  Array.from({ length: n }, () => ({ clientId, at: at(-ago) }));

t.test('a challenge: new, reused while one waits, throttled by hour and by day', async (t) => {
  t.same(decideChallenge(seen(), ask), { outcome: 'new', expiresAt: at(STEP_UP_CODE_TTL_MS) });
  const w = waiting();
  t.same(decideChallenge(seen({ latest: w }), ask), { outcome: 'reused', challenge: w });
  t.equal(decideChallenge(seen({ latest: w }), { ...ask, resend: true }).outcome, 'new', 'resend');
  t.equal(decideChallenge(seen({ latest: w }), { ...ask, method: 'totp' }).outcome, 'new', 'another method');
  t.equal(decideChallenge(seen({ latest: waiting({ expiresAt: NOW }) }), ask).outcome, 'new', 'expired');
  t.equal(decideChallenge(seen({ latest: waiting({ tries: STEP_UP_TRIES }) }), ask).outcome, 'new', 'locked');

  const hour = (n: number) => Array.from({ length: n }, (_, i) => at(-(50 - i) * MIN));
  t.equal(decideChallenge(seen({ created: hour(CHALLENGES_PER_HOUR - 1) }), ask).outcome, 'new', 'the fifth');
  t.same(
    decideChallenge(seen({ created: hour(CHALLENGES_PER_HOUR) }), ask),
    { outcome: 'throttled', retryAfterSeconds: 10 * 60 },
    'the sixth: until the oldest is an hour old',
  );
  t.same(
    decideChallenge(seen({ created: hour(CHALLENGES_PER_HOUR), latest: w }), ask).outcome,
    'reused',
    'reusing counts against nothing',
  );
  const day = (n: number) => Array.from({ length: n }, (_, i) => at(-(23 * HOUR - i * MIN)));
  t.equal(decideChallenge(seen({ created: day(CHALLENGES_PER_DAY - 1) }), ask).outcome, 'new', 'the twentieth');
  t.same(decideChallenge(seen({ created: day(CHALLENGES_PER_DAY) }), ask), {
    outcome: 'throttled',
    retryAfterSeconds: HOUR / 1000,
  });
  t.equal(
    decideChallenge(seen({ created: [...day(CHALLENGES_PER_DAY - 1), at(-25 * HOUR)] }), ask).outcome,
    'new',
    'older than 24 hours counts for nothing',
  );
  t.same(
    decideChallenge(seen({ wrong: wrongCodes(10, 'app_a', HOUR) }), ask),
    { outcome: 'locked', retryAfterSeconds: 23 * 3600 },
    'paused: no new codes',
  );
});

t.test('pauses: 10 wrong codes from one app, 20 from all, over 24 hours', async (t) => {
  t.equal(pausedFor(wrongCodes(9, 'app_a', HOUR), 'app_a', NOW), null, 'nine');
  t.equal(pausedFor(wrongCodes(10, 'app_a', HOUR), 'app_a', NOW), 23 * 3600, 'ten');
  t.equal(pausedFor(wrongCodes(10, 'app_a', HOUR), 'app_b', NOW), null, 'another app is not paused by them');
  const across = [...wrongCodes(9, 'app_a', HOUR), ...wrongCodes(9, 'app_b', 2 * HOUR), ...wrongCodes(1, 'app_c', 0)];
  t.equal(pausedFor(across, 'app_c', NOW), null, 'nineteen across apps');
  t.equal(pausedFor([...across, { clientId: 'app_c', at: NOW }], 'app_c', NOW), 22 * 3600, 'twenty');
  t.equal(pausedFor(wrongCodes(10, 'app_a', 24 * HOUR), 'app_a', NOW), null, 'a day later');
});

t.test('a code: passed, wrong with the tries left, locked, expired', async (t) => {
  t.same(judgeCode(seen({ latest: waiting() }), 'app_a', true, NOW), {
    outcome: 'passed',
    elevatedUntil: at(ELEVATION_MS),
  });
  t.same(judgeCode(seen({ latest: waiting({ tries: 3 }) }), 'app_a', false, NOW), {
    outcome: 'wrong',
    tries: 4,
    triesLeft: 1,
  });
  t.same(judgeCode(seen({ latest: waiting({ tries: 5 }) }), 'app_a', true, NOW), {
    outcome: 'locked',
    retryAfterSeconds: null,
  });
  t.same(judgeCode(seen(), 'app_a', true, NOW), { outcome: 'expired' }, 'none waiting');
  t.same(judgeCode(seen({ latest: waiting({ expiresAt: NOW }) }), 'app_a', true, NOW), { outcome: 'expired' });
  t.same(judgeCode(seen({ latest: waiting(), wrong: wrongCodes(10, 'app_a', 0) }), 'app_a', true, NOW), {
    outcome: 'locked',
    retryAfterSeconds: 24 * 3600,
  });
  t.equal(maskEmail('owner1@example.com'), 'o***@example.com');
});

t.test('an authenticator or backup code used for step-up', async (t) => {
  const hashes = Array.from({ length: BACKUP_CODE_COUNT }, (_, i) => `h${i}`);
  const given = (events: AccountEvent[]): AccountState =>
    events.reduce(accountAggregate.evolve, accountAggregate.initialState);
  const on: AccountEvent[] = [
    {
      type: 'AccountCreated',
      data: { userId: 'usr_1', email: 'a@example.com', name: 'a', image: null, createdAt: NOW },
    },
    { type: 'TwoFactorEnabled', data: { userId: 'usr_1', backupCodeHashes: hashes, totpStep: 100, enabledAt: NOW } },
  ];
  const cmd = { userId: 'usr_1', clientId: 'app_a', now: NOW };
  const totp = decideStepUpFactor(given(on), { ...cmd, factor: { kind: 'totp', step: 101 } });
  t.same(totp, [
    {
      type: 'StepUpFactorUsed',
      data: { userId: 'usr_1', clientId: 'app_a', factor: 'totp', totpStep: 101, usedAt: NOW },
    },
  ]);
  const after = given([...on, ...totp]);
  t.equal(after.lastTotpStep, 101, 'the step is spent');
  t.equal(
    refusal(() => decideStepUpFactor(after, { ...cmd, factor: { kind: 'totp', step: 101 } })).code,
    'code_reused',
  );
  const backup = decideStepUpFactor(after, { ...cmd, factor: { kind: 'backup_code', hash: 'h3' } });
  t.same(
    backup.map((e) => e.type),
    ['StepUpFactorUsed', 'BackupCodeUsed'],
  );
  t.equal(
    refusal(() =>
      decideStepUpFactor(given([...on, ...backup]), { ...cmd, factor: { kind: 'backup_code', hash: 'h3' } }),
    ).code,
    'code_invalid',
    'a backup code once',
  );
  t.equal(
    refusal(() => decideStepUpFactor(given(on.slice(0, 1)), { ...cmd, factor: { kind: 'totp', step: 1 } })).code,
    'two_factor_off',
  );
});
