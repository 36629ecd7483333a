import { sql } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { AccountsTables } from './tables.ts';

/**
 * Sessions and two-factor of people (not of a workspace: these rows carry none). Who a person is
 * (email, name) is the members read model's `accounts`.
 */
export const accountsProjector = defineProjector<AccountsTables>()({
  name: 'accounts',
  version: 1,
  tables: ['account_sessions', 'account_two_factor'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.account_sessions (
      session_id text PRIMARY KEY,
      user_id text NOT NULL,
      signed_in_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL,
      signed_out_at timestamptz
    );
    CREATE TABLE IF NOT EXISTS ${s}.account_two_factor (
      user_id text PRIMARY KEY,
      enabled_at timestamptz NOT NULL,
      backup_codes integer NOT NULL,
      backup_codes_used integer[] NOT NULL
    );`,
  indexes: (s) => `CREATE INDEX IF NOT EXISTS account_sessions_user ON ${s}.account_sessions (user_id);`,
  on: {
    SignedIn: async (db, { data: d }) => {
      await db
        .insertInto('account_sessions')
        .values({ session_id: d.sessionId, user_id: d.userId, signed_in_at: d.signedInAt, expires_at: d.expiresAt })
        .onConflict((oc) => oc.column('session_id').doNothing())
        .execute();
    },
    SignedOut: async (db, { data: d }) => {
      await db
        .updateTable('account_sessions')
        .set({ signed_out_at: d.signedOutAt })
        .where('session_id', '=', d.sessionId)
        .execute();
    },
    TwoFactorEnabled: async (db, { data: d }) => {
      const row = { enabled_at: d.enabledAt, backup_codes: d.backupCodeHashes.length, backup_codes_used: [] };
      await db
        .insertInto('account_two_factor')
        .values({ user_id: d.userId, ...row })
        .onConflict((oc) => oc.column('user_id').doUpdateSet(row))
        .execute();
    },
    // The spent codes' places, not a count: an event handed over again changes nothing.
    BackupCodeUsed: async (db, { data: d }) => {
      await sql`UPDATE account_two_factor SET backup_codes_used = array_append(backup_codes_used, ${d.index}::integer)
        WHERE user_id = ${d.userId} AND NOT ${d.index}::integer = ANY(backup_codes_used)`.execute(db);
    },
    TwoFactorDisabled: async (db, { data: d }) => {
      await db.deleteFrom('account_two_factor').where('user_id', '=', d.userId).execute();
    },
  },
});
