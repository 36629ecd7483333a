import { sql, type Kysely } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { TemplateAnalyticsTables } from './tables.ts';

type Db = Kysely<TemplateAnalyticsTables>;
type Flag = 'delivered' | 'bounced' | 'complained' | 'opened' | 'clicked' | 'unsubscribed';

/** Sets a recipient's flag; mail sent without a template has no row, and is left alone. */
async function mark(db: Db, emailId: string, recipient: string, ...flags: Flag[]) {
  const set = sql.join(flags.map((f) => sql`${sql.ref(f)} = true`));
  await sql`UPDATE template_sends SET ${set} WHERE email_id = ${emailId} AND recipient = ${recipient.toLowerCase()}`.execute(
    db,
  );
}

/**
 * What became of mail sent with templates, per recipient: the read model of
 * `GET /templates/{id}/analytics`. Sent counts the recipients queued at acceptance (suppressed
 * ones never go out); delivery answers, complaints, opens, clicks (a click counts as an open too:
 * the pixel is often blocked where the link is followed) and unsubscribes made through the message
 * set flags on them.
 */
export const templateAnalyticsProjector = defineProjector<TemplateAnalyticsTables>()({
  name: 'template-analytics',
  version: 1,
  tables: ['template_sends'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.template_sends (
      workspace_id text NOT NULL,
      email_id text NOT NULL,
      recipient text NOT NULL,
      template_id text NOT NULL,
      version_id text NOT NULL,
      from_email text NOT NULL,
      from_domain text NOT NULL,
      sent_at timestamptz NOT NULL,
      cancelled boolean NOT NULL DEFAULT false,
      delivered boolean NOT NULL DEFAULT false,
      bounced boolean NOT NULL DEFAULT false,
      complained boolean NOT NULL DEFAULT false,
      opened boolean NOT NULL DEFAULT false,
      clicked boolean NOT NULL DEFAULT false,
      unsubscribed boolean NOT NULL DEFAULT false,
      PRIMARY KEY (email_id, recipient)
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS template_sends_template ON ${s}.template_sends (workspace_id, template_id, sent_at);`,
  on: {
    EmailAccepted: async (db, e) => {
      const d = e.data;
      if (d.template === null) return;
      const fromEmail = d.from.email.toLowerCase();
      const rows = [
        ...new Set(d.recipients.filter((r) => r.status === 'queued').map((r) => r.email.toLowerCase())),
      ].map((recipient) => ({
        workspace_id: e.metadata.workspaceId,
        email_id: d.emailId,
        recipient,
        template_id: d.template!.id,
        version_id: d.template!.versionId,
        from_email: fromEmail,
        from_domain: fromEmail.slice(fromEmail.lastIndexOf('@') + 1),
        sent_at: d.acceptedAt,
      }));
      if (rows.length === 0) return;
      await db
        .insertInto('template_sends')
        .values(rows)
        .onConflict((c) => c.columns(['email_id', 'recipient']).doNothing())
        .execute();
    },
    EmailCancelled: async (db, { data: d }) => {
      await db.updateTable('template_sends').set({ cancelled: true }).where('email_id', '=', d.emailId).execute();
    },
    EmailRecipientDelivered: (db, { data: d }) => mark(db, d.emailId, d.recipient, 'delivered'),
    EmailRecipientBounced: (db, { data: d }) => mark(db, d.emailId, d.recipient, 'bounced'),
    EmailRecipientComplained: (db, { data: d }) => mark(db, d.emailId, d.recipient, 'complained'),
    EmailOpened: (db, { data: d }) => mark(db, d.emailId, d.recipient, 'opened'),
    EmailLinkClicked: (db, { data: d }) => mark(db, d.emailId, d.recipient, 'clicked', 'opened'),
    ContactUnsubscribed: async (db, { data: d }) => {
      if (d.emailId) await mark(db, d.emailId, d.email, 'unsubscribed');
    },
  },
});
