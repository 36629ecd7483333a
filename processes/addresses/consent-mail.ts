import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { consentLinks } from '../../commands/addresses/consent.ts';
import type { WorkQueue } from '../../infra/bus/port.ts';
import type { DueWakeups } from '../due-work.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import { OWED_MAIL_DEFAULTS, OwedMailProcess, type OwedMailOptions, publicLink } from '../owed-mails.ts';
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

export type ConsentMailOptions = OwedMailOptions;

export const DEFAULT_CONSENT_MAIL_OPTIONS: ConsentMailOptions = {
  queue: 'forward-consent-mails',
  ...OWED_MAIL_DEFAULTS,
};

interface OwedMail {
  forward_id: string;
  nonce: string;
  destination: string;
  address: string | null;
}

/** Mails owed consent links (processes/owed-mails.ts); the link asks the destination to allow forwarding. */
export class ForwardConsentMailProcess extends OwedMailProcess<OwedMail> {
  constructor(
    deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; mail: MailSender; consentKey: Buffer },
    options: ConsentMailOptions = DEFAULT_CONSENT_MAIL_OPTIONS,
  ) {
    super(
      deps,
      {
        table: 'consent_mails',
        label: 'forward consent mail',
        jobPrefix: 'fcm',
        owed: async (pool, position, attempts) =>
          (
            await pool.query<OwedMail>(
              `SELECT m.forward_id, m.nonce, m.destination, a.address
               FROM consent_mails m LEFT JOIN consent_mail_addresses a ON a.address_id = m.address_id
               WHERE m.position = $1 AND m.attempts = $2 AND m.enqueued_at IS NOT NULL AND m.sent_at IS NULL`,
              [position, attempts],
            )
          ).rows[0],
        describe: (m) => m.forward_id,
        mail: (m, options) => {
          const from = m.address ?? 'an address of this service';
          const link = publicLink(
            options,
            `/forward-consent/${consentLinks.token(deps.consentKey, m.forward_id, m.nonce)}`,
          );
          return {
            to: [m.destination],
            subject: `Forward mail from ${from} to you?`,
            text:
              `${from} asks to forward the mail it receives to ${m.destination}.\n\n` +
              'Nothing is forwarded until you allow it. To allow or decline, open:\n\n' +
              `${link}\n\n` +
              'The link works for 7 days. If you do not know the sender, ignore this mail: nothing will be forwarded to you.\n',
            headers: { 'Auto-Submitted': 'auto-generated' },
          };
        },
      },
      options,
    );
  }
}
