import { sql, type Kysely } from 'kysely';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

/** The account an email has (lower-cased), or none. */
export async function findAccountByEmail(db: Db, email: string): Promise<{ userId: string } | undefined> {
  const row = await db
    .selectFrom('accounts')
    .select('user_id')
    .where('email', '=', email)
    .orderBy('created_at')
    .executeTakeFirst();
  return row ? { userId: row.user_id } : undefined;
}

/** The email of an account, or none. */
export async function emailOfAccount(db: Db, userId: string): Promise<string | undefined> {
  const row = await db.selectFrom('accounts').select('email').where('user_id', '=', userId).executeTakeFirst();
  return row?.email;
}

export interface SessionRow {
  sessionId: string;
  userId: string;
  email: string;
  name: string;
  expiresAt: Date;
}

/** A session that is neither signed out nor expired, with its person. */
export async function findLiveSession(db: Db, sessionId: string): Promise<SessionRow | undefined> {
  return db
    .selectFrom('account_sessions as s')
    .innerJoin('accounts as a', 'a.user_id', 's.user_id')
    .select(['s.session_id as sessionId', 's.user_id as userId', 'a.email', 'a.name', 's.expires_at as expiresAt'])
    .where('s.session_id', '=', sessionId)
    .where('s.signed_out_at', 'is', null)
    .where('s.expires_at', '>', sql<Date>`now()`)
    .executeTakeFirst();
}

/** A person's sessions that are neither signed out nor expired, the newest first. */
export async function liveSessionsOf(db: Db, userId: string): Promise<{ sessionId: string; signedInAt: Date }[]> {
  return db
    .selectFrom('account_sessions')
    .select(['session_id as sessionId', 'signed_in_at as signedInAt'])
    .where('user_id', '=', userId)
    .where('signed_out_at', 'is', null)
    .where('expires_at', '>', sql<Date>`now()`)
    .orderBy('signed_in_at', 'desc')
    .orderBy('session_id')
    .execute();
}

/** Two-factor of an account: when it was turned on and the backup codes left; none when off. */
export async function twoFactorOf(
  db: Db,
  userId: string,
): Promise<{ enabledAt: Date; backupCodesLeft: number } | undefined> {
  const row = await db
    .selectFrom('account_two_factor')
    .select(['enabled_at', 'backup_codes', 'backup_codes_used'])
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return row && { enabledAt: row.enabled_at, backupCodesLeft: row.backup_codes - row.backup_codes_used.length };
}

/** The workspaces a person owns or is a member of, by name. */
export async function workspacesOf(
  db: Db,
  userId: string,
): Promise<{ workspaceId: string; name: string; isOwner: boolean }[]> {
  return db
    .selectFrom('memberships as m')
    .innerJoin('workspaces as w', 'w.id', 'm.workspace_id')
    .select(['w.id as workspaceId', 'w.name', 'm.is_owner as isOwner'])
    .where('m.user_id', '=', userId)
    .orderBy('w.name')
    .orderBy('w.id')
    .execute();
}
