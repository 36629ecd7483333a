import { defineProjector } from '../projector.ts';
import type { TempInboxesTables } from './tables.ts';

/** Disposable inboxes: rows while they live; the expiry takes the inbox and its messages away. */
export const tempInboxesProjector = defineProjector<TempInboxesTables>()({
  name: 'temp_inboxes',
  version: 1,
  tables: ['temp_inboxes', 'temp_inbox_messages'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.temp_inboxes (
      id text PRIMARY KEY,
      address text NOT NULL,
      token_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      expires_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.temp_inbox_messages (
      id text PRIMARY KEY,
      inbox_id text NOT NULL,
      mail_from text NOT NULL,
      raw_sha256 text NOT NULL,
      size integer NOT NULL,
      summary jsonb NOT NULL,
      received_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS temp_inboxes_expiry ON ${s}.temp_inboxes (expires_at);
    CREATE INDEX IF NOT EXISTS temp_inbox_messages_inbox ON ${s}.temp_inbox_messages (inbox_id, received_at DESC, id DESC);`,
  on: {
    TempInboxCreated: async (db, { data: d }) => {
      await db
        .insertInto('temp_inboxes')
        .values({
          id: d.inboxId,
          address: d.address,
          token_hash: d.tokenHash,
          created_at: d.createdAt,
          expires_at: d.expiresAt,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    TempInboxMessageReceived: async (db, { data: d }) => {
      await db
        .insertInto('temp_inbox_messages')
        .values({
          id: d.messageId,
          inbox_id: d.inboxId,
          mail_from: d.mailFrom,
          raw_sha256: d.raw.sha256,
          size: d.raw.size,
          summary: JSON.stringify(d.summary),
          received_at: d.receivedAt,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    TempInboxExpired: async (db, { data: d }) => {
      await db.deleteFrom('temp_inbox_messages').where('inbox_id', '=', d.inboxId).execute();
      await db.deleteFrom('temp_inboxes').where('id', '=', d.inboxId).execute();
    },
  },
});
