import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { consentLinks } from '../../commands/addresses/consent.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import { DueWork } from '../due-work.ts';
import type { ConsentMailTables } from './tables.ts';

type Db = Kysely<ConsentMailTables>;
const REACTS_TO = [
  'AddressCreated',
  'AddressDeleted',
  'AddressForwardAdded',
  'AddressForwardConsentRequested',
  'AddressForwardRemoved',
  'AddressForwardAnswered',
] as const;

/** A link answered, replaced or gone needs no mail any more. */
const dropUnsent = (db: Db, forwardId: string) =>
  sql`DELETE FROM consent_mails WHERE forward_id = ${forwardId} AND sent_at IS NULL`.execute(db);

const owe = (
  db: Db,
  event: Projected<(typeof REACTS_TO)[number]>,
  forwardId: string,
  nonce: string,
  destination: string,
) =>
  sql`INSERT INTO consent_mails (position, workspace_id, address_id, forward_id, nonce, destination, next_attempt_at)
    VALUES (${event.position}, ${event.metadata.workspaceId}, ${(event.data as { addressId: string }).addressId}, ${forwardId},
      ${nonce}, ${destination}, now())
    ON CONFLICT (position) DO NOTHING`.execute(db);

/**
 * Follows the log and owes one consent mail per link a forward is given (added pending, or
 * resent), in the same transaction as its checkpoint, so no link goes unmailed whichever process
 * wrote it. A link replaced, answered or removed before its mail went drops the mail. The
 * allowance per destination was spent by the command (domain/address-consents), not here.
 */
export const forwardConsentMails = defineReactor<ConsentMailTables>()({
  name: 'forward_consent_mails',
  version: 1,
  tables: ['consent_mail_addresses', 'consent_mails'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.consent_mail_addresses (
      address_id text PRIMARY KEY,
      address text NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.consent_mails (
      position bigint PRIMARY KEY,
      workspace_id text NOT NULL,
      address_id text NOT NULL,
      forward_id text NOT NULL,
      nonce text NOT NULL,
      destination text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      last_error text,
      sent_at timestamptz
    );
    CREATE INDEX IF NOT EXISTS consent_mails_due ON ${s}.consent_mails (next_attempt_at) WHERE sent_at IS NULL;
    CREATE INDEX IF NOT EXISTS consent_mails_forward ON ${s}.consent_mails (forward_id) WHERE sent_at IS NULL;`,
  reactsTo: REACTS_TO,
  async react(db, events) {
    for (const event of events) {
      switch (event.type) {
        case 'AddressCreated':
          await sql`INSERT INTO consent_mail_addresses (address_id, address) VALUES (${event.data.addressId}, ${event.data.address})
            ON CONFLICT (address_id) DO NOTHING`.execute(db);
          break;
        case 'AddressDeleted':
          await sql`DELETE FROM consent_mails WHERE address_id = ${event.data.addressId} AND sent_at IS NULL`.execute(
            db,
          );
          await sql`DELETE FROM consent_mail_addresses WHERE address_id = ${event.data.addressId}`.execute(db);
          break;
        case 'AddressForwardAdded':
          if (event.data.nonce !== null)
            await owe(db, event, event.data.forwardId, event.data.nonce, event.data.destination);
          break;
        case 'AddressForwardConsentRequested': {
          const { rows } = await sql<{ destination: string }>`SELECT destination FROM consent_mails
            WHERE forward_id = ${event.data.forwardId} ORDER BY position DESC LIMIT 1`.execute(db);
          await dropUnsent(db, event.data.forwardId);
          if (rows[0]) await owe(db, event, event.data.forwardId, event.data.nonce, rows[0].destination);
          break;
        }
        case 'AddressForwardRemoved':
        case 'AddressForwardAnswered':
          await dropUnsent(db, event.data.forwardId);
          break;
      }
    }
  },
});

export interface ConsentMailOptions {
  /** The bus queue of consent mail jobs; one per database (jobs name rows of it). */
  queue: string;
  /** Delay before the next try after try n failed; the last one repeats until the mail is sent. */
  retryMs: number[];
  staleAfterMs: number;
  pollMs: number;
  /** The sender of the mails. */
  from: string;
  /** Where this service is reached from outside: the consent page's links start with it. */
  publicUrl: string;
}

export const DEFAULT_CONSENT_MAIL_OPTIONS: ConsentMailOptions = {
  queue: 'forward-consent-mails',
  retryMs: [5_000, 60_000, 600_000, 3_600_000],
  staleAfterMs: 60_000,
  pollMs: 500,
  from: 'Workspace Mail Service <no-reply@localhost>',
  publicUrl: 'http://localhost:3000',
};

interface OwedMail {
  forward_id: string;
  nonce: string;
  destination: string;
  address: string | null;
}

/**
 * Mails owed consent links (claimed onto the bus like webhook notices) until each is handed over,
 * then marks it sent. A mail goes twice only when a process dies between the hand-over and the
 * mark, or a send outlasts `staleAfterMs`; both links then are the same one.
 */
export class ForwardConsentMailProcess {
  private readonly work: DueWork<{ position: string; attempts: number }>;

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; mail: MailSender; consentKey: Buffer },
    private readonly options: ConsentMailOptions = DEFAULT_CONSENT_MAIL_OPTIONS,
  ) {
    this.work = new DueWork<{ position: string; attempts: number }>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'forward consent mail' },
      {
        table: 'consent_mails',
        key: 'position',
        due: 'sent_at IS NULL AND next_attempt_at <= now()',
        order: 'next_attempt_at',
        set: 'attempts = r.attempts + 1',
        returning: 'r.position, r.attempts',
      },
      (m) => ({ id: `fcm-${m.position}.${m.attempts}`, payload: { position: m.position, attempts: m.attempts } }),
    );
  }

  start(): Promise<void> {
    return this.work.start((job) => this.handle(job), {
      onError: (error) => console.error('forward consent mail:', error),
    });
  }

  stop(): Promise<void> {
    return this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { position, attempts } = job.payload as { position: string; attempts: number };
    const { rows } = await this.deps.pool.query<OwedMail>(
      `SELECT m.forward_id, m.nonce, m.destination, a.address
       FROM consent_mails m LEFT JOIN consent_mail_addresses a ON a.address_id = m.address_id
       WHERE m.position = $1 AND m.attempts = $2 AND m.enqueued_at IS NOT NULL AND m.sent_at IS NULL`,
      [position, attempts],
    );
    const owed = rows[0];
    if (!owed) return { ack: true };
    try {
      await this.send(owed);
    } catch (error) {
      console.error(`forward consent mail for ${owed.forward_id} (try ${attempts}):`, error);
      const delay = this.options.retryMs[Math.min(attempts, this.options.retryMs.length) - 1] ?? 0;
      await this.deps.pool.query(
        `UPDATE consent_mails SET enqueued_at = NULL, last_error = $3, next_attempt_at = now() + make_interval(secs => $4::double precision / 1000)
         WHERE position = $1 AND attempts = $2`,
        [position, attempts, String((error as Error).message ?? error).slice(0, 300), delay],
      );
      return { ack: true };
    }
    await this.deps.pool.query('UPDATE consent_mails SET enqueued_at = NULL, sent_at = now() WHERE position = $1', [
      position,
    ]);
    return { ack: true };
  }

  private async send(m: OwedMail): Promise<void> {
    const from = m.address ?? 'an address of this service';
    const link = `${this.options.publicUrl.replace(/\/+$/, '')}/forward-consent/${consentLinks.token(this.deps.consentKey, m.forward_id, m.nonce)}`;
    await this.deps.mail.send({
      from: this.options.from,
      to: [m.destination],
      subject: `Forward mail from ${from} to you?`,
      text:
        `${from} asks to forward the mail it receives to ${m.destination}.\n\n` +
        'Nothing is forwarded until you allow it. To allow or decline, open:\n\n' +
        `${link}\n\n` +
        'The link works for 7 days. If you do not know the sender, ignore this mail: nothing will be forwarded to you.\n',
      headers: { 'Auto-Submitted': 'auto-generated' },
    });
  }
}
