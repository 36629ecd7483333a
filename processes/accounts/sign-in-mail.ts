import type pg from 'pg';
import type { AccountCodes } from '../../commands/accounts/codes.ts';
import { SIGN_IN_CODE_TTL_MS } from '../../domain/accounts/sign-in.ts';
import type { WorkQueue } from '../../infra/bus/port.ts';
import type { DueWakeups } from '../due-work.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { OWED_MAIL_DEFAULTS, OwedMailProcess, type OwedMailOptions, publicLink } from '../owed-mails.ts';

export type SignInMailOptions = OwedMailOptions;

/** A code lives 10 minutes: tries after that would mail a dead code, and the row lapses first. */
export const DEFAULT_SIGN_IN_MAIL_OPTIONS: SignInMailOptions = {
  queue: 'sign-in-mails',
  ...OWED_MAIL_DEFAULTS,
  retryMs: [2_000, 10_000, 30_000, 60_000],
};

interface OwedMail {
  challenge_id: string;
  email: string;
  expired: boolean;
}

/**
 * Mails the sign-in codes owed in `sign_in_mails` (infra/sign-in/postgres.ts, written with the
 * challenge, for accounts only) through the mail port, tried again on failure until the code
 * expires. The code is derived again from the challenge's id; no table holds it.
 */
export class SignInMailProcess extends OwedMailProcess<OwedMail> {
  constructor(
    deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; mail: MailSender; codes: AccountCodes },
    options: SignInMailOptions = DEFAULT_SIGN_IN_MAIL_OPTIONS,
  ) {
    super(
      deps,
      {
        table: 'sign_in_mails',
        label: 'sign-in mail',
        jobPrefix: 'sim',
        owed: async (pool, position, attempts) =>
          (
            await pool.query<OwedMail>(
              `SELECT challenge_id, email, expires_at <= now() AS expired FROM sign_in_mails
               WHERE position = $1 AND attempts = $2 AND enqueued_at IS NOT NULL AND sent_at IS NULL`,
              [position, attempts],
            )
          ).rows[0],
        lapsed: (m) => m.expired,
        // The email, not the challenge: the challenge's id is half of a sign-in.
        describe: (m) => m.email,
        mail: (m, options) => {
          const code = deps.codes.signInCode(m.challenge_id);
          return {
            to: [m.email],
            subject: `${code} is your sign-in code`,
            text:
              `Your code to sign in to the Workspace Mail Service at ${publicLink(options, '/sign-in')} is:\n\n` +
              `    ${code}\n\n` +
              `It works for ${SIGN_IN_CODE_TTL_MS / 60_000} minutes, once. If you did not ask for it, ignore this mail: ` +
              'nobody can sign in without the code.\n',
            headers: { 'Auto-Submitted': 'auto-generated' },
          };
        },
      },
      options,
    );
  }
}
