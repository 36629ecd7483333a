import type pg from 'pg';
import type { SignInChallenge } from '../../domain/accounts/sign-in.ts';
import type { SignInChallengeStore } from './port.ts';

/**
 * `sign_in_mails` has the columns of an owed mail (processes/owed-mails.ts); a row names its
 * challenge, whose code the mail process derives again (commands/accounts/codes.ts): no code is
 * stored anywhere.
 */
export const SIGN_IN_SCHEMA = `
CREATE TABLE IF NOT EXISTS sign_in_challenges (
  id text PRIMARY KEY,
  email text NOT NULL,
  user_id text,
  stage text NOT NULL,
  tries integer NOT NULL,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS sign_in_challenges_email ON sign_in_challenges (email, created_at);
CREATE INDEX IF NOT EXISTS sign_in_challenges_created ON sign_in_challenges (created_at);
CREATE TABLE IF NOT EXISTS sign_in_mails (
  position bigserial PRIMARY KEY,
  challenge_id text NOT NULL,
  email text NOT NULL,
  expires_at timestamptz NOT NULL,
  attempts integer NOT NULL DEFAULT 0,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  enqueued_at timestamptz,
  last_error text,
  sent_at timestamptz
);
CREATE INDEX IF NOT EXISTS sign_in_mails_due ON sign_in_mails (next_attempt_at) WHERE sent_at IS NULL;`;

/** Challenges and their mails are kept a day (the hourly throttle reads the last hour of them). */
const KEPT = "interval '1 day'";

interface Row {
  id: string;
  email: string;
  user_id: string | null;
  stage: SignInChallenge['stage'];
  tries: number;
  expires_at: Date;
}

const challengeOf = (r: Row): SignInChallenge => ({
  id: r.id,
  email: r.email,
  userId: r.user_id,
  stage: r.stage,
  tries: r.tries,
  expiresAt: r.expires_at.toISOString(),
});

export class PostgresSignInChallenges implements SignInChallengeStore {
  constructor(
    private readonly pool: pg.Pool,
    /** A mail was owed (committed): its sender looks now rather than at its next poll. */
    private readonly mailOwed: () => void = () => {},
  ) {}

  async issue<T>(
    email: string,
    decide: (recent: string[]) => { result: T; challenge?: SignInChallenge; mail?: boolean },
  ): Promise<T> {
    let owed = false;
    const answer = await this.transaction(async (client) => {
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('sign-in:' || $1, 0))", [email]);
      const { rows } = await client.query<{ created_at: Date }>(
        "SELECT created_at FROM sign_in_challenges WHERE email = $1 AND created_at > now() - interval '1 hour'",
        [email],
      );
      const { result, challenge, mail } = decide(rows.map((r) => r.created_at.toISOString()));
      if (challenge) {
        await client.query(
          `INSERT INTO sign_in_challenges (id, email, user_id, stage, tries, expires_at, created_at)
           VALUES ($1, $2, $3, $4, $5, $6, now())`,
          [challenge.id, challenge.email, challenge.userId, challenge.stage, challenge.tries, challenge.expiresAt],
        );
        if (mail) {
          await client.query('INSERT INTO sign_in_mails (challenge_id, email, expires_at) VALUES ($1, $2, $3)', [
            challenge.id,
            challenge.email,
            challenge.expiresAt,
          ]);
          owed = true;
        }
        await client.query(`DELETE FROM sign_in_challenges WHERE created_at < now() - ${KEPT}`);
        await client.query(`DELETE FROM sign_in_mails WHERE expires_at < now() - ${KEPT}`);
      }
      return result;
    });
    if (owed) this.mailOwed();
    return answer;
  }

  async answer<T>(
    id: string,
    judge: (challenge: SignInChallenge | undefined) => Promise<{ result: T; next?: SignInChallenge }>,
  ): Promise<T> {
    return this.transaction(async (client) => {
      const { rows } = await client.query<Row>(
        'SELECT id, email, user_id, stage, tries, expires_at FROM sign_in_challenges WHERE id = $1 FOR UPDATE',
        [id],
      );
      const { result, next } = await judge(rows[0] ? challengeOf(rows[0]) : undefined);
      if (next)
        await client.query('UPDATE sign_in_challenges SET stage = $2, tries = $3, expires_at = $4 WHERE id = $1', [
          id,
          next.stage,
          next.tries,
          next.expiresAt,
        ]);
      return result;
    });
  }

  private async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
}
