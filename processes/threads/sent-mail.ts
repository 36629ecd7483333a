import { sql, type Kysely } from 'kysely';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { SentMailTables } from './tables.ts';

type Db = Kysely<SentMailTables>;

const REACTS_TO = ['EmailAccepted', 'EmailSendingStarted', 'EmailCancelled', 'MessageSent'] as const;
type Event = Projected<(typeof REACTS_TO)[number]>;

/**
 * Owes each sent email to the threads of the mailbox that sent it: a row per live email, due at
 * once, or when its sending starts if it was scheduled (a scheduled email cancelled in time was
 * never sent, and its row goes). The `MessageSent` the worker (worker.ts) appends takes the row
 * off, in log order, so a restart files nothing twice. Broadcasts are not filed: a broadcast is
 * one message to an audience, read as a broadcast, not a conversation per recipient. Test-mode
 * mail never leaves the machine and is not sent mail. Never rebuilt (a reactor); on a database
 * whose log predates it, it owes every live email of the history once, which files them.
 */
export const sentMailFiling = defineReactor<SentMailTables>()({
  name: 'sent_mail_filing',
  version: 1,
  tables: ['sent_mail_filing'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.sent_mail_filing (
      email_id text PRIMARY KEY,
      workspace_id text NOT NULL,
      address_id text NOT NULL,
      address text NOT NULL,
      domain_id text NOT NULL,
      raw_sha256 text NOT NULL,
      raw_size bigint NOT NULL,
      bcc text[] NOT NULL,
      sent_at timestamptz,
      due_at timestamptz,
      enqueued_at timestamptz,
      claims integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS sent_mail_filing_due ON ${s}.sent_mail_filing (due_at) WHERE due_at IS NOT NULL;`,
  reactsTo: REACTS_TO,
  react: owe,
});

/** Consecutive events of one kind are one statement: a burst of sends is one insert, and so on. */
async function owe(db: Db, events: Event[]): Promise<void> {
  for (let i = 0; i < events.length; ) {
    let end = i + 1;
    while (end < events.length && events[end]!.type === events[i]!.type) end++;
    await apply(db, events.slice(i, end));
    i = end;
  }
}

async function apply(db: Db, run: Event[]): Promise<void> {
  switch (run[0]!.type) {
    case 'EmailAccepted': {
      const rows = (run as Projected<'EmailAccepted'>[])
        .filter(({ data: d }) => d.mode === 'live' && d.source !== 'broadcast')
        .map(({ metadata, data: d }) => ({
          email_id: d.emailId,
          workspace_id: metadata.workspaceId,
          address_id: d.from.addressId,
          address: d.from.email,
          domain_id: d.from.domainId,
          raw_sha256: d.raw.sha256,
          raw_size: d.raw.size,
          bcc: d.recipients.filter((r) => r.kind === 'bcc').map((r) => r.email),
          sent_at: d.scheduledAt === null ? d.acceptedAt : null,
        }));
      if (rows.length === 0) return;
      await sql`INSERT INTO sent_mail_filing (email_id, workspace_id, address_id, address, domain_id, raw_sha256,
          raw_size, bcc, sent_at, due_at)
        SELECT email_id, workspace_id, address_id, address, domain_id, raw_sha256, raw_size, bcc, sent_at,
          CASE WHEN sent_at IS NULL THEN NULL ELSE now() END
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(email_id text, workspace_id text,
          address_id text, address text, domain_id text, raw_sha256 text, raw_size bigint, bcc text[],
          sent_at timestamptz)
        ON CONFLICT (email_id) DO NOTHING`.execute(db);
      return;
    }
    case 'EmailSendingStarted': {
      const started = run as Projected<'EmailSendingStarted'>[];
      await sql`UPDATE sent_mail_filing f SET sent_at = s.at, due_at = now()
        FROM unnest(${started.map((e) => e.data.emailId)}::text[], ${started.map((e) => e.data.startedAt)}::timestamptz[])
          AS s(email_id, at)
        WHERE f.email_id = s.email_id AND f.sent_at IS NULL`.execute(db);
      return;
    }
    case 'EmailCancelled':
    case 'MessageSent': {
      const ids = (run as Projected<'EmailCancelled' | 'MessageSent'>[]).map((e) => e.data.emailId);
      await sql`DELETE FROM sent_mail_filing WHERE email_id = ANY(${ids}::text[])`.execute(db);
      return;
    }
  }
}
