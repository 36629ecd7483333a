import { sql, type Kysely, type RawBuilder } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { EmailsTables } from './tables.ts';

type Db = Kysely<EmailsTables>;
type Attempt = Projected<'EmailRecipientDelivered' | 'EmailRecipientDeferred' | 'EmailRecipientBounced'>;

/** The history row of an event. */
const historyRow = (
  e: Projected<'EmailCancelled' | 'EmailRecipientComplained' | 'EmailRecipientDelayReported'>,
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
  await settled(
    sql`SELECT email_id, status, ${at}::timestamptz AS at FROM email_recipients WHERE email_id = ${emailId}`,
  ).execute(db);
}

/**
 * `settle`'s statement for every message in `standing`, a query of `email_id`, `status` (each
 * recipient's) and `at` (the answer's time).
 */
const settled = (standing: RawBuilder<unknown>) =>
  sql`UPDATE emails e SET status = CASE
        WHEN c.waiting > 0 THEN 'sending'
        WHEN c.bounced = 0 THEN 'delivered'
        WHEN c.delivered = 0 THEN 'bounced'
        ELSE 'partially_bounced' END,
      updated_at = GREATEST(e.updated_at, c.at)
    FROM (SELECT email_id, max(at) AS at,
            count(*) FILTER (WHERE status IN ('queued', 'deferred')) AS waiting,
            count(*) FILTER (WHERE status = 'bounced') AS bounced,
            count(*) FILTER (WHERE status IN ('delivered', 'complained')) AS delivered
          FROM (${standing}) s GROUP BY email_id) c
    WHERE e.id = c.email_id AND e.status NOT IN ('cancelled', 'failed')`;

const ANSWERED = {
  EmailRecipientDelivered: 'delivered',
  EmailRecipientDeferred: 'deferred',
  EmailRecipientBounced: 'bounced',
} as const;

/**
 * Recipients' answers, at most one per message (`applyBatch` gives each message's events in
 * turns), in one statement: each recipient's row, its history row, and each message's standing
 * as `settle` derives it. The statement's parts see one snapshot, so the count reads each
 * recipient's status as the update leaves it (the updated rows as they return, the others as they
 * stand).
 */
async function answers(db: Db, events: Attempt[]) {
  const rows = events.map((e) => {
    const d = e.data;
    return [
      d.emailId,
      d.recipient,
      ANSWERED[e.type],
      e.type === 'EmailRecipientBounced' ? e.data.bounce : null,
      d.attempt,
      d.code,
      d.enhancedCode,
      d.response,
      d.at,
      e.metadata.workspaceId,
      e.position,
      e.type,
      {
        attempt: d.attempt,
        code: d.code,
        enhancedCode: d.enhancedCode,
        response: d.response,
        mx: d.mx,
        tls: d.tls,
        ...(e.type === 'EmailRecipientDeferred' ? { nextAttemptAt: e.data.nextAttemptAt } : {}),
        ...(e.type === 'EmailRecipientBounced' ? { bounce: e.data.bounce } : {}),
        ...(e.type === 'EmailRecipientBounced' && e.data.source ? { source: e.data.source } : {}),
      },
    ];
  });
  // A recipient's answers come in log order; a complaint (after delivery) is not overwritten by a late replay.
  await sql`WITH answer AS (
      SELECT r->>0 AS email_id, r->>1 AS recipient, r->>2 AS status, r->>3 AS reason, (r->>4)::integer AS attempt,
        (r->>5)::integer AS code, r->>6 AS enhanced_code, r->>7 AS response, (r->>8)::timestamptz AS at,
        r->>9 AS workspace_id, (r->>10)::bigint AS position, r->>11 AS type, r->12 AS detail
      FROM jsonb_array_elements(${JSON.stringify(rows)}::jsonb) r
    ), answered AS (
      UPDATE email_recipients x SET status = CASE WHEN x.status = 'complained' THEN x.status ELSE a.status END,
        reason = CASE WHEN x.status = 'complained' THEN x.reason ELSE a.reason END,
        attempts = GREATEST(x.attempts, a.attempt), last_code = a.code, last_enhanced_code = a.enhanced_code,
        last_response = a.response, updated_at = a.at
      FROM answer a
      WHERE x.email_id = a.email_id AND lower(x.email) = lower(a.recipient)
      RETURNING x.email_id, x.position, x.status
    ), recorded AS (
      INSERT INTO email_history (workspace_id, email_id, position, type, recipient, at, detail)
      SELECT workspace_id, email_id, position, type, recipient, at, detail FROM answer
      ON CONFLICT (email_id, position) DO NOTHING
    )
    ${settled(
      sql`SELECT x.email_id, coalesce(n.status, x.status) AS status, a.at
        FROM answer a JOIN email_recipients x ON x.email_id = a.email_id
        LEFT JOIN answered n ON n.email_id = x.email_id AND n.position = x.position`,
    )}`.execute(db);
}

/** Messages whose sending started, at most one event per message, in one statement: each message and its history row. */
async function started(db: Db, events: Projected<'EmailSendingStarted'>[]) {
  const rows = events.map((e) => [e.data.emailId, e.data.startedAt, e.metadata.workspaceId, e.position]);
  await sql`WITH start AS (
      SELECT r->>0 AS email_id, (r->>1)::timestamptz AS at, r->>2 AS workspace_id, (r->>3)::bigint AS position
      FROM jsonb_array_elements(${JSON.stringify(rows)}::jsonb) r
    ), moved AS (
      UPDATE emails e SET status = CASE WHEN e.status IN ('scheduled', 'queued') THEN 'sending' ELSE e.status END,
        sending_started_at = s.at, updated_at = GREATEST(e.updated_at, s.at)
      FROM start s WHERE e.id = s.email_id
    )
    INSERT INTO email_history (workspace_id, email_id, position, type, recipient, at, detail)
    SELECT workspace_id, email_id, position, 'EmailSendingStarted', NULL, at, '{}'::jsonb FROM start
    ON CONFLICT (email_id, position) DO NOTHING`.execute(db);
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

type Handled =
  | 'EmailAccepted'
  | 'EmailCancelled'
  | 'EmailSendingStarted'
  | 'EmailRecipientDelivered'
  | 'EmailRecipientDeferred'
  | 'EmailRecipientBounced'
  | 'EmailRecipientComplained'
  | 'EmailOpened'
  | 'EmailLinkClicked'
  | 'EmailRecipientDelayReported';

const isAnswer = (e: Projected<Handled>): e is Attempt => e.type in ANSWERED;

/**
 * A batch in turns: the first event of each message in it, then each one's second, and so on.
 * Events of different messages touch different rows, so within a turn their order does not
 * matter, while a message's own events keep theirs; a turn's acceptances, starts and answers go
 * in one statement each. Sends and their deliveries interleave in the log, so runs of one type
 * were short: a batch cost a statement or two per event, and a send waited for all of them.
 */
async function inTurns(db: Db, events: Projected<Handled>[]) {
  const turns: Projected<Handled>[][] = [];
  const seen = new Map<string, number>();
  for (const e of events) {
    const turn = seen.get(e.data.emailId) ?? 0;
    seen.set(e.data.emailId, turn + 1);
    if (turns[turn]) turns[turn].push(e);
    else turns[turn] = [e];
  }
  for (const turn of turns) {
    const accepted = turn.filter((e) => e.type === 'EmailAccepted');
    const starts = turn.filter((e) => e.type === 'EmailSendingStarted');
    const answered = turn.filter(isAnswer);
    if (accepted.length > 0) await accept(db, accepted);
    if (starts.length > 0) await started(db, starts);
    if (answered.length > 0) await answers(db, answered);
    for (const e of turn)
      if (e.type !== 'EmailAccepted' && e.type !== 'EmailSendingStarted' && !isAnswer(e))
        await emailsProjector.apply(db as Kysely<unknown>, e);
  }
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
    -- Arriving mail looks up the sent email it answers by its Message-ID (threads/queries.ts).
    CREATE INDEX IF NOT EXISTS emails_workspace_message_id ON ${s}.emails (workspace_id, message_id);
    CREATE INDEX IF NOT EXISTS email_recipients_email ON ${s}.email_recipients (email_id, email);`,
  applyBatch: (db, events) => inTurns(db, events),
  on: {
    EmailAccepted: (db, e) => accept(db, [e]),
    EmailCancelled: async (db, e) => {
      const d = e.data;
      await sql`UPDATE emails SET status = 'cancelled', cancelled_at = ${d.cancelledAt}, updated_at = ${d.cancelledAt}
        WHERE id = ${d.emailId}`.execute(db);
      await historyRow(e, null, d.cancelledAt, {}).execute(db);
    },
    EmailSendingStarted: (db, e) => started(db, [e]),
    EmailRecipientDelivered: (db, e) => answers(db, [e]),
    EmailRecipientDeferred: (db, e) => answers(db, [e]),
    EmailRecipientBounced: (db, e) => answers(db, [e]),
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
