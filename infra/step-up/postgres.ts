import type pg from 'pg';
import { DAY_MS, type StepUpChallenge } from '../../domain/step-up/rules.ts';
import type { StepUpStore, StepUpTurn } from './port.ts';

/**
 * Step-up rows (docs/decisions/step-up.md). No code is stored: an email code is derived from its
 * challenge's id under the accounts key (commands/accounts/codes.ts), and an authenticator code
 * from the secret in the vault. `step_up_elevations` is read by the token admission
 * (projections/oauth/admission.ts) on every request.
 */
export const STEP_UP_SCHEMA = `
CREATE TABLE IF NOT EXISTS step_up_challenges (
  id text PRIMARY KEY,
  client_id text NOT NULL,
  user_id text NOT NULL,
  method text NOT NULL,
  tries integer NOT NULL DEFAULT 0,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL,
  ended_at timestamptz
);
CREATE INDEX IF NOT EXISTS step_up_challenges_app ON step_up_challenges (user_id, client_id, created_at);
CREATE TABLE IF NOT EXISTS step_up_wrong_codes (
  user_id text NOT NULL,
  client_id text NOT NULL,
  at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS step_up_wrong_codes_person ON step_up_wrong_codes (user_id, at);
CREATE TABLE IF NOT EXISTS step_up_elevations (
  client_id text NOT NULL,
  user_id text NOT NULL,
  elevated_until timestamptz NOT NULL,
  PRIMARY KEY (client_id, user_id)
);`;

interface ChallengeRow {
  id: string;
  client_id: string;
  user_id: string;
  method: StepUpChallenge['method'];
  tries: number;
  expires_at: Date;
  created_at: Date;
}

const challengeOf = (r: ChallengeRow): StepUpChallenge => ({
  id: r.id,
  clientId: r.client_id,
  userId: r.user_id,
  method: r.method,
  tries: r.tries,
  expiresAt: r.expires_at.toISOString(),
  createdAt: r.created_at.toISOString(),
});

export class PostgresStepUp implements StepUpStore {
  constructor(private readonly pool: pg.Pool) {}

  /**
   * One turn at a time per person (an advisory lock on their id): the per-app and per-person
   * counts are read and written under it, so of two requests at a budget's edge one wins. Rows
   * older than the 24 hours any budget looks back are swept by the turn that reads them.
   */
  async turn<T>(userId: string, work: (turn: StepUpTurn) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query("SELECT pg_advisory_xact_lock(hashtextextended('step-up:' || $1, 0))", [userId]);
      const since = `now() - interval '${DAY_MS / 1000} seconds'`;
      await client.query(`DELETE FROM step_up_challenges WHERE user_id = $1 AND created_at < ${since}`, [userId]);
      await client.query(`DELETE FROM step_up_wrong_codes WHERE user_id = $1 AND at < ${since}`, [userId]);
      const turn: StepUpTurn = {
        seen: async (clientId) => {
          const created = await client.query<ChallengeRow & { ended_at: Date | null }>(
            `SELECT id, client_id, user_id, method, tries, expires_at, created_at, ended_at FROM step_up_challenges
             WHERE user_id = $1 AND client_id = $2 ORDER BY created_at DESC, id`,
            [userId, clientId],
          );
          const wrong = await client.query<{ client_id: string; at: Date }>(
            'SELECT client_id, at FROM step_up_wrong_codes WHERE user_id = $1',
            [userId],
          );
          const latest = created.rows.find((r) => r.ended_at === null);
          return {
            created: created.rows.map((r) => r.created_at.toISOString()),
            wrong: wrong.rows.map((r) => ({ clientId: r.client_id, at: r.at.toISOString() })),
            latest: latest && challengeOf(latest),
          };
        },
        open: async (c) => {
          await turn.endAll(c.clientId);
          await client.query(
            `INSERT INTO step_up_challenges (id, client_id, user_id, method, tries, expires_at, created_at)
             VALUES ($1, $2, $3, $4, 0, $5, $6)`,
            [c.id, c.clientId, c.userId, c.method, c.expiresAt, c.createdAt],
          );
        },
        withdraw: async (id) => {
          await client.query('DELETE FROM step_up_challenges WHERE id = $1', [id]);
        },
        endAll: async (clientId) => {
          await client.query(
            'UPDATE step_up_challenges SET ended_at = now() WHERE user_id = $1 AND client_id = $2 AND ended_at IS NULL',
            [userId, clientId],
          );
        },
        wrong: async (c, tries, at) => {
          await client.query('UPDATE step_up_challenges SET tries = $2 WHERE id = $1', [c.id, tries]);
          await client.query('INSERT INTO step_up_wrong_codes (user_id, client_id, at) VALUES ($1, $2, $3)', [
            userId,
            c.clientId,
            at,
          ]);
        },
        use: async (id, at) => {
          await client.query('UPDATE step_up_challenges SET ended_at = $2 WHERE id = $1', [id, at]);
        },
      };
      const result = await work(turn);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  async elevate(clientId: string, userId: string, until: string): Promise<string> {
    const { rows } = await this.pool.query<{ elevated_until: Date }>(
      `INSERT INTO step_up_elevations (client_id, user_id, elevated_until) VALUES ($1, $2, $3)
       ON CONFLICT (client_id, user_id) DO UPDATE SET elevated_until = greatest(step_up_elevations.elevated_until, excluded.elevated_until)
       RETURNING elevated_until`,
      [clientId, userId, until],
    );
    return rows[0]!.elevated_until.toISOString();
  }

  async elevationsOf(userId: string): Promise<Map<string, string>> {
    const { rows } = await this.pool.query<{ client_id: string; elevated_until: Date }>(
      'SELECT client_id, elevated_until FROM step_up_elevations WHERE user_id = $1 AND elevated_until > now()',
      [userId],
    );
    return new Map(rows.map((r) => [r.client_id, r.elevated_until.toISOString()]));
  }
}
