import { generateSecret, generateURI } from 'otplib';
import { decideDisableTwoFactor, decideEnableTwoFactor } from '../../domain/accounts/decide.ts';
import { accountStream } from '../../domain/accounts/events.ts';
import { accountAggregate } from '../../domain/accounts/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import { execute, loadState, type CommandContext } from '../execute.ts';
import { type AccountPorts, personActor, secondFactorOf, totpSecretId, totpSetupId } from './sign-in.ts';

/** Whose two-factor: the signed-in person. */
export interface Person {
  userId: string;
  email: string;
}

/** The name authenticator apps show the account under. */
const ISSUER = 'Workspace Mail Service';

/**
 * A new authenticator secret to show once, for the person to add to their app. It waits in the
 * vault (encrypted) until a code of it confirms it; asking again replaces it.
 */
export async function startTwoFactorSetup(
  ports: AccountPorts,
  person: Person,
): Promise<{ secret: string; uri: string }> {
  const secret = generateSecret();
  await ports.secrets.put(totpSetupId(person.userId), secret);
  return { secret, uri: generateURI({ issuer: ISSUER, label: person.email, secret }) };
}

/**
 * Turns two-factor on once `code` is a code of the waiting secret; answers the ten backup codes
 * to show once. The secret becomes the account's in the vault before the event that turns it on,
 * so two-factor is never on without one.
 */
export async function confirmTwoFactor(
  ctx: CommandContext,
  ports: AccountPorts,
  person: Person,
  code: string,
  now: string,
): Promise<string[]> {
  const secret = await ports.secrets.get(totpSetupId(person.userId));
  if (!secret) fail('code_expired', 'No authenticator is being set up: start again.', 'code');
  const factor = /^\d{6}$/.test(code.replace(/\s+/g, ''))
    ? await secondFactorOf(ports, totpSetupId(person.userId), code, now)
    : null;
  if (factor?.kind !== 'totp') fail('code_invalid', 'That is not the code your authenticator shows.', 'code');
  const backupCodes = ports.codes.newBackupCodes();
  // Checked before the secret is moved, so a confirmation never replaces the secret in use; two
  // confirmations at once move the same waiting secret.
  const { state } = await loadState(ctx, accountStream(person.email), accountAggregate);
  if (state.twoFactor) fail('two_factor_on', 'Two-factor is on already.');
  await ports.secrets.put(totpSecretId(person.userId), secret);
  await execute(ctx, personActor(person.userId), accountStream(person.email), accountAggregate, (s) =>
    decideEnableTwoFactor(s, {
      totpStep: factor.step,
      backupCodeHashes: backupCodes.map((c) => ports.codes.backupCodeHash(c)),
      now,
    }),
  );
  await ports.secrets.delete(totpSetupId(person.userId));
  return backupCodes;
}

/**
 * Turns two-factor off, proven by an unused authenticator or backup code; the secret leaves the
 * vault. A wrong code is recorded (five in an hour pause this) and refused.
 */
export async function disableTwoFactor(
  ctx: CommandContext,
  ports: AccountPorts,
  person: Person,
  code: string,
  now: string,
): Promise<void> {
  const { state } = await loadState(ctx, accountStream(person.email), accountAggregate);
  const factor = state.twoFactor ? await secondFactorOf(ports, totpSecretId(person.userId), code, now, state) : null;
  const { events } = await execute(
    ctx,
    personActor(person.userId),
    accountStream(person.email),
    accountAggregate,
    (s) => decideDisableTwoFactor(s, { secondFactor: factor, now }),
  );
  if (events[0]?.type === 'SecondFactorRejected')
    fail('code_invalid', 'That is not an unused code of your authenticator nor a backup code.', 'code');
  if (events.length > 0) await ports.secrets.delete(totpSecretId(person.userId));
}
