import { sql, type Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { BroadcastsTables } from './tables.ts';

type Db = Kysely<BroadcastsTables>;

/** The flags of an email's outcomes that count once each, by the column of `broadcasts` they count in. */
type Flag = 'delivered' | 'bounced' | 'complained' | 'opened' | 'clicked';

/**
 * Broadcasts and their progress. The broadcast's own events give its status and times; its
 * emails' events (an `EmailAccepted` naming the broadcast, then delivery, engagement) count into
 * it through `broadcast_emails`, whose flags make every count idempotent and once per recipient
 * (a second open of one message is no second opener). An unsubscribe counts for the latest
 * broadcast message to that address before it, once per message: the link carries no broadcast.
 */
export const broadcastsProjector = defineProjector<BroadcastsTables>()({
  name: 'broadcasts',
  version: 1,
  tables: ['broadcasts', 'broadcast_emails'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.broadcasts (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      name text,
      status text NOT NULL,
      from_address text NOT NULL,
      template_id text NOT NULL,
      subject text,
      audience_ids text[] NOT NULL,
      scheduled_at timestamptz,
      created_at timestamptz NOT NULL,
      started_at timestamptz,
      completed_at timestamptz,
      cancelled_at timestamptz,
      recipients integer,
      sent integer NOT NULL DEFAULT 0,
      failed integer NOT NULL DEFAULT 0,
      delivered integer NOT NULL DEFAULT 0,
      bounced integer NOT NULL DEFAULT 0,
      complained integer NOT NULL DEFAULT 0,
      opened integer NOT NULL DEFAULT 0,
      clicked integer NOT NULL DEFAULT 0,
      unsubscribed integer NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS ${s}.broadcast_emails (
      email_id text PRIMARY KEY,
      workspace_id text NOT NULL,
      broadcast_id text NOT NULL,
      recipient text NOT NULL,
      accepted_at timestamptz NOT NULL,
      delivered boolean NOT NULL DEFAULT false,
      bounced boolean NOT NULL DEFAULT false,
      complained boolean NOT NULL DEFAULT false,
      opened boolean NOT NULL DEFAULT false,
      clicked boolean NOT NULL DEFAULT false,
      unsubscribed boolean NOT NULL DEFAULT false
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS broadcasts_workspace_created ON ${s}.broadcasts (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS broadcast_emails_recipient ON ${s}.broadcast_emails (workspace_id, recipient, accepted_at DESC);`,
  on: {
    BroadcastCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('broadcasts')
        .values({
          workspace_id: workspaceId,
          id: d.broadcastId,
          name: d.name,
          status: 'scheduled',
          from_address: d.from,
          template_id: d.templateId,
          subject: d.subject,
          audience_ids: d.audienceIds,
          scheduled_at: d.scheduledAt,
          created_at: d.createdAt,
          started_at: null,
          completed_at: null,
          cancelled_at: null,
          recipients: null,
          sent: 0,
          failed: 0,
          delivered: 0,
          bounced: 0,
          complained: 0,
          opened: 0,
          clicked: 0,
          unsubscribed: 0,
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    BroadcastStarted: async (db, { data: d }) => {
      await db
        .updateTable('broadcasts')
        .set({ status: 'sending', started_at: d.startedAt, recipients: d.recipients })
        .where('id', '=', d.broadcastId)
        .execute();
    },
    BroadcastCancelled: async (db, { data: d }) => {
      await db
        .updateTable('broadcasts')
        .set({ status: 'cancelled', cancelled_at: d.cancelledAt })
        .where('id', '=', d.broadcastId)
        .execute();
    },
    BroadcastCompleted: async (db, { data: d }) => {
      // The refusals are known only here; the guard on the status counts them once.
      await sql`UPDATE broadcasts SET status = 'completed', completed_at = ${d.completedAt}::timestamptz,
          failed = failed + ${d.refused}
        WHERE id = ${d.broadcastId} AND status <> 'completed'`.execute(db);
    },
    EmailAccepted: (db, event) => accepted(db, [event]),
    EmailRecipientDelivered: async (db, { data: d }) => flag(db, d.emailId, 'delivered'),
    EmailRecipientBounced: async (db, { data: d }) => flag(db, d.emailId, 'bounced'),
    EmailRecipientComplained: async (db, { data: d }) => flag(db, d.emailId, 'complained'),
    EmailOpened: async (db, { data: d }) => flag(db, d.emailId, 'opened'),
    EmailLinkClicked: async (db, { data: d }) => flag(db, d.emailId, 'clicked'),
    ContactUnsubscribed: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`WITH latest AS (
          SELECT email_id, broadcast_id, unsubscribed FROM broadcast_emails
          WHERE workspace_id = ${workspaceId} AND recipient = ${d.email.toLowerCase()} AND accepted_at <= ${d.createdAt}::timestamptz
          ORDER BY accepted_at DESC LIMIT 1),
        marked AS (
          UPDATE broadcast_emails b SET unsubscribed = true FROM latest
          WHERE b.email_id = latest.email_id AND NOT latest.unsubscribed RETURNING b.broadcast_id)
        UPDATE broadcasts SET unsubscribed = unsubscribed + 1 FROM marked WHERE broadcasts.id = marked.broadcast_id`.execute(
        db,
      );
    },
  },
  onRun: { EmailAccepted: accepted },
});

/**
 * Acceptances of broadcast messages, a run of them in one statement (a broadcast's page lands as
 * a run): each message's row once, then `sent` (`failed` when its one recipient was suppressed)
 * counted for the rows that were new, so a replay counts nothing twice.
 */
async function accepted(db: Db, events: Projected<'EmailAccepted'>[]): Promise<void> {
  const rows = events.flatMap(({ metadata: { workspaceId }, data: d }) => {
    const recipient = d.recipients[0];
    return d.broadcastId === undefined || !recipient
      ? []
      : [
          {
            d,
            workspaceId,
            broadcastId: d.broadcastId,
            recipient: recipient.email.toLowerCase(),
            queued: recipient.status === 'queued',
          },
        ];
  });
  if (rows.length === 0) return;
  await sql`WITH given AS (
      SELECT DISTINCT ON (email_id) * FROM unnest(
        ${rows.map((r) => r.d.emailId)}::text[], ${rows.map((r) => r.workspaceId)}::text[],
        ${rows.map((r) => r.broadcastId)}::text[], ${rows.map((r) => r.recipient)}::text[],
        ${rows.map((r) => r.d.acceptedAt)}::timestamptz[], ${rows.map((r) => r.queued)}::boolean[]
      ) AS u(email_id, workspace_id, broadcast_id, recipient, accepted_at, queued)),
    inserted AS (
      INSERT INTO broadcast_emails (email_id, workspace_id, broadcast_id, recipient, accepted_at)
      SELECT email_id, workspace_id, broadcast_id, recipient, accepted_at FROM given
      ON CONFLICT (email_id) DO NOTHING RETURNING email_id),
    counts AS (
      SELECT g.broadcast_id, count(*) FILTER (WHERE g.queued) AS sent, count(*) FILTER (WHERE NOT g.queued) AS failed
      FROM given g JOIN inserted USING (email_id) GROUP BY g.broadcast_id)
    UPDATE broadcasts b SET sent = b.sent + counts.sent, failed = b.failed + counts.failed
    FROM counts WHERE b.id = counts.broadcast_id`.execute(db);
}

async function flag(db: Db, emailId: string, column: Flag): Promise<void> {
  const c = sql.ref(column);
  await sql`WITH marked AS (
      UPDATE broadcast_emails SET ${c} = true WHERE email_id = ${emailId} AND NOT ${c} RETURNING broadcast_id)
    UPDATE broadcasts SET ${c} = broadcasts.${c} + 1 FROM marked WHERE broadcasts.id = marked.broadcast_id`.execute(db);
}
