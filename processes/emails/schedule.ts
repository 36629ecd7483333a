import { sql, type Kysely } from 'kysely';
import { recipientDomains } from '../../domain/emails/delivery.ts';
import { domainOf } from '../../domain/shared/allowlists.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { EmailDeliveryTables } from './tables.ts';

type Db = Kysely<EmailDeliveryTables>;

const REACTS_TO = [
  'EmailAccepted',
  'EmailCancelled',
  'EmailRecipientDelivered',
  'EmailRecipientBounced',
  'EmailRecipientDeferred',
] as const;
type Event = Projected<(typeof REACTS_TO)[number]>;

/** The work row of a message's recipients on one domain. */
export const workIdOf = (emailId: string, domain: string) => `${emailId}:${domain}`;

/**
 * The scheduling half of outbound delivery: follows the log and keeps what is due. A live message
 * gets one row per recipient domain, due at its scheduled time or at once; a deferral moves the
 * row to the retry time the worker decided; a final answer takes the recipient off the row; a
 * cancel drops the message's rows. Test-mode messages never leave the machine, and suppressed
 * recipients are never attempted, so neither gets a row. The worker (worker.ts) sends.
 *
 * Like webhook dispatch it runs under the projection runner and is never rebuilt: replaying the
 * log into an empty table would only re-create what is still open, but a reactor's tables are the
 * state of work done outside, and the runner treats them so.
 */
export const emailDeliverySchedule = defineReactor<EmailDeliveryTables>()({
  name: 'email_delivery_schedule',
  version: 1,
  tables: ['email_delivery_work'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.email_delivery_work (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      email_id text NOT NULL,
      domain text NOT NULL,
      open text[] NOT NULL,
      next_attempt_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      claims integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS email_delivery_work_due ON ${s}.email_delivery_work (next_attempt_at);
    CREATE INDEX IF NOT EXISTS email_delivery_work_email ON ${s}.email_delivery_work (email_id);`,
  reactsTo: REACTS_TO,
  react: schedule,
});

interface Row {
  id: string;
  workspaceId: string;
  emailId: string;
  domain: string;
  open: string;
  due: string;
}

/**
 * Consecutive events of one kind are written in one statement: a burst of sends is one insert,
 * a burst of answers one update. Runs keep the log's order between kinds.
 */
async function schedule(db: Db, events: Event[]): Promise<void> {
  let run: Event[] = [];
  for (const event of events) {
    if (run.length > 0 && kindOf(run[0]!) !== kindOf(event)) {
      await flush(db, run);
      run = [];
    }
    run.push(event);
  }
  if (run.length > 0) await flush(db, run);
}

const kindOf = (e: Event) =>
  e.type === 'EmailRecipientDelivered' || e.type === 'EmailRecipientBounced' ? 'settled' : e.type;

async function flush(db: Db, run: Event[]): Promise<void> {
  const rows: Row[] = [];
  const settled: { id: string; recipient: string }[] = [];
  const deferred: { id: string; recipient: string; at: string }[] = [];
  const cancelled: string[] = [];
  for (const e of run) {
    switch (e.type) {
      case 'EmailAccepted': {
        const d = e.data;
        if (d.mode !== 'live') break;
        for (const domain of recipientDomains(d)) {
          const open = d.recipients.filter((r) => r.status === 'queued' && domainOf(r.email) === domain);
          rows.push({
            id: workIdOf(d.emailId, domain),
            workspaceId: e.metadata.workspaceId,
            emailId: d.emailId,
            domain,
            // A Postgres array literal is awkward to build safely; JSON is unnested in SQL.
            open: JSON.stringify(open.map((r) => r.email)),
            due: d.scheduledAt ?? d.acceptedAt,
          });
        }
        break;
      }
      case 'EmailCancelled':
        cancelled.push(e.data.emailId);
        break;
      case 'EmailRecipientDelivered':
      case 'EmailRecipientBounced':
        settled.push({ id: workIdOf(e.data.emailId, domainOf(e.data.recipient)), recipient: e.data.recipient });
        break;
      case 'EmailRecipientDeferred':
        deferred.push({
          id: workIdOf(e.data.emailId, domainOf(e.data.recipient)),
          recipient: e.data.recipient,
          at: e.data.nextAttemptAt,
        });
        break;
    }
  }
  if (rows.length > 0) {
    const col = <K extends keyof Row>(k: K) => rows.map((r) => r[k]);
    await sql`INSERT INTO email_delivery_work (id, workspace_id, email_id, domain, open, next_attempt_at)
      SELECT id, ws, em, dom, ARRAY(SELECT jsonb_array_elements_text(open::jsonb)), due
      FROM unnest(${col('id')}::text[], ${col('workspaceId')}::text[], ${col('emailId')}::text[], ${col('domain')}::text[],
                  ${col('open')}::text[], ${col('due')}::timestamptz[]) AS t(id, ws, em, dom, open, due)
      ON CONFLICT (id) DO NOTHING`.execute(db);
  }
  if (cancelled.length > 0)
    await sql`DELETE FROM email_delivery_work WHERE email_id = ANY(${cancelled}::text[])`.execute(db);
  if (settled.length > 0) {
    const ids = settled.map((s) => s.id);
    await sql`UPDATE email_delivery_work w SET open = ARRAY(SELECT unnest(w.open) EXCEPT SELECT unnest(s.done))
      FROM (SELECT id, array_agg(recipient) AS done
            FROM unnest(${ids}::text[], ${settled.map((s) => s.recipient)}::text[]) AS t(id, recipient) GROUP BY id) s
      WHERE w.id = s.id`.execute(db);
    await sql`DELETE FROM email_delivery_work WHERE id = ANY(${ids}::text[]) AND cardinality(open) = 0`.execute(db);
  }
  if (deferred.length > 0) {
    // The recipients of one row are attempted together, so their deferrals name one time; the
    // latest wins, and the row is off the bus until then.
    await sql`UPDATE email_delivery_work w SET next_attempt_at = d.at, enqueued_at = NULL
      FROM (SELECT id, max(at) AS at FROM unnest(${deferred.map((d) => d.id)}::text[], ${deferred.map((d) => d.at)}::timestamptz[]) AS t(id, at) GROUP BY id) d
      WHERE w.id = d.id`.execute(db);
  }
}
