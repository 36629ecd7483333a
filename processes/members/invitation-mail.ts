import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { invitationLinks } from '../../commands/members/links.ts';
import { INVITATION_TTL_MS, invitationExpiry } from '../../domain/members/decide.ts';
import type { WorkQueue } from '../../infra/bus/port.ts';
import type { DueWakeups } from '../due-work.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { defineReactor } from '../../projections/projector.ts';
import { OWED_MAIL_DEFAULTS, OwedMailProcess, type OwedMailOptions, publicLink } from '../owed-mails.ts';
import type { InvitationMailTables } from './tables.ts';

type Db = Kysely<InvitationMailTables>;

/** A link refreshed or accepted before its mail went needs no mail any more. */
const dropUnsent = (db: Db, invitationId: string) =>
  sql`DELETE FROM invitation_mails WHERE invitation_id = ${invitationId} AND sent_at IS NULL`.execute(db);

/**
 * Follows the log and owes one mail per invitation link (an invitation, or its refresh after ten
 * minutes under the same id), in the same transaction as its checkpoint: the request that invites
 * only records the invitation, and whichever process wrote it, its mail is owed. A refresh drops
 * the unsent mail of the link it retires. Invitations whose link had expired when this reactor
 * met them (a history older than this process) owe nothing.
 */
export const memberInvitationMails = defineReactor<InvitationMailTables>()({
  name: 'member_invitation_mails',
  version: 1,
  tables: ['invitation_mail_workspaces', 'invitation_mails'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.invitation_mail_workspaces (
      workspace_id text PRIMARY KEY,
      name text NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.invitation_mails (
      position bigint PRIMARY KEY,
      workspace_id text NOT NULL,
      invitation_id text NOT NULL,
      nonce text NOT NULL,
      email text NOT NULL,
      invited_at timestamptz NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      last_error text,
      sent_at timestamptz
    );
    CREATE INDEX IF NOT EXISTS invitation_mails_due ON ${s}.invitation_mails (next_attempt_at) WHERE sent_at IS NULL;
    CREATE INDEX IF NOT EXISTS invitation_mails_invitation ON ${s}.invitation_mails (invitation_id) WHERE sent_at IS NULL;`,
  reactsTo: ['WorkspaceCreated', 'MemberInvited', 'InvitationAccepted'],
  async react(db, events) {
    for (const event of events) {
      switch (event.type) {
        case 'WorkspaceCreated':
          await sql`INSERT INTO invitation_mail_workspaces (workspace_id, name) VALUES (${event.data.workspaceId}, ${event.data.name})
            ON CONFLICT (workspace_id) DO NOTHING`.execute(db);
          break;
        case 'MemberInvited': {
          const { invitationId, nonce, email, invitedAt } = event.data;
          await dropUnsent(db, invitationId);
          if (invitationExpiry(invitedAt) <= Date.now()) break;
          await sql`INSERT INTO invitation_mails (position, workspace_id, invitation_id, nonce, email, invited_at, next_attempt_at)
            VALUES (${event.position}, ${event.metadata.workspaceId}, ${invitationId}, ${nonce}, ${email}, ${invitedAt}, now())
            ON CONFLICT (position) DO NOTHING`.execute(db);
          break;
        }
        case 'InvitationAccepted':
          await dropUnsent(db, event.data.invitationId);
          break;
      }
    }
  },
});

export type InvitationMailOptions = OwedMailOptions;

export const DEFAULT_INVITATION_MAIL_OPTIONS: InvitationMailOptions = {
  queue: 'member-invitation-mails',
  ...OWED_MAIL_DEFAULTS,
};

interface OwedMail {
  invitation_id: string;
  nonce: string;
  email: string;
  expired: boolean;
  workspace: string;
}

/**
 * Mails owed invitation links (processes/owed-mails.ts); a link that expired while its mail was
 * owed is dropped unsent.
 */
export class MemberInvitationMailProcess extends OwedMailProcess<OwedMail> {
  constructor(
    deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; mail: MailSender; key: Buffer },
    options: InvitationMailOptions = DEFAULT_INVITATION_MAIL_OPTIONS,
  ) {
    super(
      deps,
      {
        table: 'invitation_mails',
        label: 'invitation mail',
        jobPrefix: 'mim',
        owed: async (pool, position, attempts) =>
          (
            await pool.query<OwedMail>(
              `SELECT m.invitation_id, m.nonce, m.email, m.invited_at + make_interval(secs => $3::double precision / 1000) <= now() AS expired,
                 w.name AS workspace
               FROM invitation_mails m JOIN invitation_mail_workspaces w ON w.workspace_id = m.workspace_id
               WHERE m.position = $1 AND m.attempts = $2 AND m.enqueued_at IS NOT NULL AND m.sent_at IS NULL`,
              [position, attempts, INVITATION_TTL_MS],
            )
          ).rows[0],
        lapsed: (m) => m.expired,
        describe: (m) => m.invitation_id,
        mail: ({ workspace, ...m }, options) => {
          const link = publicLink(options, `/invitations/${invitationLinks.token(deps.key, m.invitation_id, m.nonce)}`);
          return {
            to: [m.email],
            subject: `You are invited to ${workspace}`.slice(0, 200),
            text:
              `You are invited to join the workspace ${workspace} on the Workspace Mail Service.\n\n` +
              `To accept, open:\n\n${link}\n\n` +
              'The link works for 7 days. If you did not expect this, ignore this mail: nothing happens unless you accept.\n',
            headers: { 'Auto-Submitted': 'auto-generated' },
          };
        },
      },
      options,
    );
  }
}
