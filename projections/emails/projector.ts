import { sql, type Kysely, type RawBuilder } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { EmailsTables } from './tables.ts';

type Db = Kysely<EmailsTables>;
type Attempt = Projected<'EmailRecipientDelivered' | 'EmailRecipientDeferred' | 'EmailRecipientBounced'>;

/** The history row of an event: a statement alone, or a part of the event's one statement. */
const historyRow = (
  e: Projected<
    | 'EmailCancelled'
    | 'EmailSendingStarted'
    | 'EmailRecipientDelivered'
    | 'EmailRecipientDeferred'
    | 'EmailRecipientBounced'
    | 'EmailRecipientComplained'
    | 'EmailRecipientDelayReported'
  >,
  recipient: string | null,
  at: string,
  detail: Record<string, unknown>,
) =>
  sql`INSERT INTO email_history (workspace_id, email_id, position, type, recipient, at, detail)
    VALUES (${e.metadata.workspaceId}, ${e.data.emailId}, ${e.position}, ${e.type}, ${recipient}, ${at}, ${JSON.stringify(detail)}::jsonb)
    ON CONFLICT (email_id, position) DO NOTHING`;

/**
 * After a recipient's answer: while one is still waiting (queued or deferred) the message is
 * sending; then delivered, bounced, or partially bounced. A complaint follows a delivery.
 */
async function settle(db: Db, emailId: string, at: string) {
  await settled(emailId, at, sql`SELECT status FROM email_recipients WHERE email_id = ${emailId}`).execute(db);
}

/** `settle`'s statement over `standing`, a query of the message's recipients' `status`. */
const settled = (emailId: string, at: string, standing: RawBuilder<unknown>) =>
  sql`UPDATE emails e SET status = CASE
        WHEN c.waiting > 0 THEN 'sending'
        WHEN c.bounced = 0 THEN 'delivered'
        WHEN c.delivered = 0 THEN 'bounced'
        ELSE 'partially_bounced' END,
      updated_at = GREATEST(e.updated_at, ${at}::timestamptz)
    FROM (SELECT count(*) FILTER (WHERE status IN ('queued', 'deferred')) AS waiting,
            count(*) FILTER (WHERE status = 'bounced') AS bounced,
            count(*) FILTER (WHERE status IN ('delivered', 'complained')) AS delivered
          FROM (${standing}) s) c
    WHERE e.id = ${emailId} AND e.status NOT IN ('cancelled', 'failed')`;

/**
 * A recipient's answer, in one statement (each message delivered costs one): the recipient's row,
 * the history row, and the message's standing as `settle` derives it. The statement's parts see
 * one snapshot, so the count reads each recipient's status as the update leaves it (the updated
 * rows as they return, the others as they stand).
 */
async function attempt(db: Db, e: Attempt, status: 'delivered' | 'deferred' | 'bounced', reason: string | null) {
  const d = e.data;
  const detail = {
    attempt: d.attempt,
    code: d.code,
    enhancedCode: d.enhancedCode,
    response: d.response,
    mx: d.mx,
    tls: d.tls,
    ...(e.type === 'EmailRecipientDeferred' ? { nextAttemptAt: e.data.nextAttemptAt } : {}),
    ...(e.type === 'EmailRecipientBounced' ? { bounce: e.data.bounce } : {}),
    ...(e.type === 'EmailRecipientBounced' && e.data.source ? { source: e.data.source } : {}),
  };
  // A recipient's answers come in log order; a complaint (after delivery) is not overwritten by a late replay.
  await sql`WITH answered AS (
      UPDATE email_recipients SET status = CASE WHEN status = 'complained' THEN status ELSE ${status} END,
        reason = CASE WHEN status = 'complained' THEN reason ELSE ${reason} END,
        attempts = GREATEST(attempts, ${d.attempt}), last_code = ${d.code}, last_enhanced_code = ${d.enhancedCode},
        last_response = ${d.response}, updated_at = ${d.at}
      WHERE email_id = ${d.emailId} AND lower(email) = lower(${d.recipient})
      RETURNING position, status
    ), recorded AS (${historyRow(e, d.recipient, d.at, detail)})
    ${settled(
      d.emailId,
      d.at,
      sql`SELECT coalesce(a.status, r.status) AS status
        FROM email_recipients r LEFT JOIN answered a ON a.position = r.position
        WHERE r.email_id = ${d.emailId}`,
    )}`.execute(db);
}

/**
 * An open or a click: counted on the message, and on its recipient when the token named one (a
 * message to several recipients names none: recipient ''). The first time of each is kept.
 * Applied once per event: the history row's insert (keyed by the log position) says whether it is new.
 */
async function engagement(db: Db, e: Projected<'EmailOpened' | 'EmailLinkClicked'>) {
  const d = e.data;
  const recipient = d.recipient === '' ? null : d.recipient;
  const { rows } = await sql`INSERT INTO email_history (workspace_id, email_id, position, type, recipient, at, detail)
    VALUES (${e.metadata.workspaceId}, ${d.emailId}, ${e.position}, ${e.type}, ${recipient}, ${d.at},
      ${JSON.stringify({ userAgent: d.userAgent, ...(e.type === 'EmailLinkClicked' ? { url: e.data.url } : {}) })}::jsonb)
    ON CONFLICT (email_id, position) DO NOTHING RETURNING 1`.execute(db);
  if (rows.length === 0) return;
  if (e.type === 'EmailOpened') {
    await sql`UPDATE emails SET opens = opens + 1, first_opened_at = LEAST(first_opened_at, ${d.at}::timestamptz)
      WHERE id = ${d.emailId}`.execute(db);
    if (recipient !== null)
      await sql`UPDATE email_recipients SET opens = opens + 1, first_opened_at = LEAST(first_opened_at, ${d.at}::timestamptz)
        WHERE email_id = ${d.emailId} AND lower(email) = lower(${recipient})`.execute(db);
    return;
  }
  await sql`UPDATE emails SET clicks = clicks + 1, first_clicked_at = LEAST(first_clicked_at, ${d.at}::timestamptz)
    WHERE id = ${d.emailId}`.execute(db);
  if (recipient !== null)
    await sql`UPDATE email_recipients SET clicks = clicks + 1, first_clicked_at = LEAST(first_clicked_at, ${d.at}::timestamptz)
      WHERE email_id = ${d.emailId} AND lower(email) = lower(${recipient})`.execute(db);
}

/**
 * Acceptances, many in one statement (the hot path: a batch of sends lands as a run of them, and
 * a send waits for it before it answers). Rows travel as one JSON text each, as the suppressions
 * projector does; the three tables are written by the statement's parts, which see one snapshot
 * and touch no row of each other's.
 */
async function accept(db: Db, events: Projected<'EmailAccepted'>[]) {
  const emails = [];
  const recipients = [];
  const histories = [];
  for (const e of events) {
    const d = e.data;
    const workspaceId = e.metadata.workspaceId;
    const queued = d.recipients.some((r) => r.status === 'queued');
    const status = !queued ? 'failed' : d.scheduledAt !== null ? 'scheduled' : 'queued';
    const fromEmail = d.from.email.toLowerCase();
    emails.push([
      d.emailId,
      workspaceId,
      d.messageId,
      d.from.addressId,
      d.from.domainId,
      fromEmail,
      fromEmail.slice(fromEmail.lastIndexOf('@') + 1),
      d.from.name,
      d.replyTo,
      d.subject,
      status,
      d.stream,
      d.source,
      d.mode,
      d.tags,
      d.template?.id ?? null,
      d.template?.versionId ?? null,
      d.signatureId,
      d.inReplyTo,
      d.scheduledAt,
      d.raw.sha256,
      d.raw.size,
      d.acceptedAt,
    ]);
    for (const [i, r] of d.recipients.entries())
      recipients.push([workspaceId, d.emailId, i, r.email, r.kind, r.status, r.reason, d.acceptedAt]);
    histories.push([
      workspaceId,
      d.emailId,
      e.position,
      e.type,
      d.acceptedAt,
      { status, recipients: d.recipients.map(({ email, status, reason }) => ({ email, status, reason })) },
    ]);
  }
  await sql`WITH added_emails AS (
      INSERT INTO emails (id, workspace_id, message_id, from_address_id, from_domain_id, from_email, from_domain,
        from_name, reply_to, subject, status, stream, source, mode, tags, template_id, template_version_id, signature_id,
        in_reply_to, scheduled_at, raw_sha256, raw_size, created_at, updated_at)
      SELECT r->>0, r->>1, r->>2, r->>3, r->>4, r->>5, r->>6, r->>7, r->8, r->>9, r->>10, r->>11, r->>12, r->>13, r->14,
        r->>15, r->>16, r->>17, r->>18, (r->>19)::timestamptz, r->>20, (r->>21)::integer, (r->>22)::timestamptz, (r->>22)::timestamptz
      FROM jsonb_array_elements(${JSON.stringify(emails)}::jsonb) r
      ON CONFLICT (id) DO NOTHING
    ), added_recipients AS (
      INSERT INTO email_recipients (workspace_id, email_id, position, email, kind, status, reason, attempts, updated_at)
      SELECT r->>0, r->>1, (r->>2)::integer, r->>3, r->>4, r->>5, r->>6, 0, (r->>7)::timestamptz
      FROM jsonb_array_elements(${JSON.stringify(recipients)}::jsonb) r
      ON CONFLICT (email_id, position) DO NOTHING
    )
    INSERT INTO email_history (workspace_id, email_id, position, type, recipient, at, detail)
    SELECT r->>0, r->>1, (r->>2)::bigint, r->>3, NULL, (r->>4)::timestamptz, r->5
    FROM jsonb_array_elements(${JSON.stringify(histories)}::jsonb) r
    ON CONFLICT (email_id, position) DO NOTHING`.execute(db);
}

/**
 * Sent mail as `GET /emails` lists it and `GET /emails/{id}` shows it: the message, each
 * recipient's standing and the message's history (each delivery attempt with its SMTP reply),
 * opens and clicks counted on both (version 2).
 * Rows carry the mode's partition as their workspace id.
 */
export const emailsProjector = defineProjector<EmailsTables>()({
  name: 'emails',
  version: 2,
  tables: ['emails', 'email_recipients', 'email_history'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.emails (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      message_id text NOT NULL,
      from_address_id text NOT NULL,
      from_domain_id text NOT NULL,
      from_email text NOT NULL,
      from_domain text NOT NULL,
      from_name text,
      reply_to jsonb NOT NULL,
      subject text NOT NULL,
      status text NOT NULL,
      stream text NOT NULL,
      source text NOT NULL,
      mode text NOT NULL,
      tags jsonb NOT NULL,
      template_id text,
      template_version_id text,
      signature_id text,
      in_reply_to text,
      scheduled_at timestamptz,
      raw_sha256 text NOT NULL,
      raw_size integer NOT NULL,
      created_at timestamptz NOT NULL,
      cancelled_at timestamptz,
      sending_started_at timestamptz,
      updated_at timestamptz NOT NULL,
      opens integer NOT NULL DEFAULT 0,
      clicks integer NOT NULL DEFAULT 0,
      first_opened_at timestamptz,
      first_clicked_at timestamptz
    );
    CREATE TABLE IF NOT EXISTS ${s}.email_recipients (
      workspace_id text NOT NULL,
      email_id text NOT NULL,
      position integer NOT NULL,
      email text NOT NULL,
      kind text NOT NULL,
      status text NOT NULL,
      reason text,
      attempts integer NOT NULL,
      last_code integer,
      last_enhanced_code text,
      last_response text,
      updated_at timestamptz NOT NULL,
      opens integer NOT NULL DEFAULT 0,
      clicks integer NOT NULL DEFAULT 0,
      first_opened_at timestamptz,
      first_clicked_at timestamptz,
      PRIMARY KEY (email_id, position)
    );
    CREATE TABLE IF NOT EXISTS ${s}.email_history (
      workspace_id text NOT NULL,
      email_id text NOT NULL,
      position bigint NOT NULL,
      type text NOT NULL,
      recipient text,
      at timestamptz NOT NULL,
      detail jsonb NOT NULL,
      PRIMARY KEY (email_id, position)
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS emails_workspace_created ON ${s}.emails (workspace_id, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS emails_workspace_from ON ${s}.emails (workspace_id, from_email, created_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS emails_workspace_template ON ${s}.emails (workspace_id, template_id, created_at DESC, id DESC)
      WHERE template_id IS NOT NULL;
    CREATE INDEX IF NOT EXISTS emails_tags ON ${s}.emails USING gin (tags jsonb_path_ops);
    CREATE INDEX IF NOT EXISTS email_recipients_email ON ${s}.email_recipients (email_id, email);`,
  // Runs of acceptances go in bulk; anything else in between is applied on its own, in order.
  onRun: { EmailAccepted: accept },
  on: {
    EmailAccepted: (db, e) => accept(db, [e]),
    EmailCancelled: async (db, e) => {
      const d = e.data;
      await sql`UPDATE emails SET status = 'cancelled', cancelled_at = ${d.cancelledAt}, updated_at = ${d.cancelledAt}
        WHERE id = ${d.emailId}`.execute(db);
      await historyRow(e, null, d.cancelledAt, {}).execute(db);
    },
    // One statement per message sent: the message and its history row.
    EmailSendingStarted: async (db, e) => {
      const d = e.data;
      await sql`WITH started AS (
          UPDATE emails SET status = CASE WHEN status IN ('scheduled', 'queued') THEN 'sending' ELSE status END,
            sending_started_at = ${d.startedAt}, updated_at = GREATEST(updated_at, ${d.startedAt}::timestamptz)
          WHERE id = ${d.emailId}
        )
        ${historyRow(e, null, d.startedAt, {})}`.execute(db);
    },
    EmailRecipientDelivered: (db, e) => attempt(db, e, 'delivered', null),
    EmailRecipientDeferred: (db, e) => attempt(db, e, 'deferred', null),
    EmailRecipientBounced: (db, e) => attempt(db, e, 'bounced', e.data.bounce),
    EmailRecipientComplained: async (db, e) => {
      const d = e.data;
      await sql`UPDATE email_recipients SET status = 'complained', reason = ${d.feedbackType}, updated_at = ${d.at}
        WHERE email_id = ${d.emailId} AND lower(email) = lower(${d.recipient})`.execute(db);
      await historyRow(e, d.recipient, d.at, { feedbackType: d.feedbackType }).execute(db);
      await settle(db, d.emailId, d.at);
    },
    EmailOpened: engagement,
    EmailLinkClicked: engagement,
    // A later hop is still trying: the recipient's standing stays; the report is history.
    EmailRecipientDelayReported: async (db, e) => {
      const d = e.data;
      await historyRow(e, d.recipient, d.at, {
        status: d.status,
        diagnostic: d.diagnostic,
        reportingMta: d.reportingMta,
        willRetryUntil: d.willRetryUntil,
      }).execute(db);
    },
  },
});
