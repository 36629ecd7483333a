import { sql, type Kysely } from 'kysely';
import type pg from 'pg';
import { invitationLinks } from '../../commands/members/links.ts';
import { INVITATION_TTL_MS } from '../../domain/members/decide.ts';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { defineReactor } from '../../projections/projector.ts';
import { DueWork } from '../due-work.ts';
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
          if (Date.parse(invitedAt) + INVITATION_TTL_MS <= Date.now()) break;
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

export interface InvitationMailOptions {
  /** The bus queue of invitation mail jobs; one per database (jobs name rows of it). */
  queue: string;
  /** Delay before the next try after try n failed; the last one repeats until the mail is sent. */
  retryMs: number[];
  /** A job enqueued this long ago without an outcome is enqueued again. */
  staleAfterMs: number;
  pollMs: number;
  /** The sender of the mails. */
  from: string;
  /** Where this service is reached from outside: acceptance links start with it. */
  publicUrl: string;
}

export const DEFAULT_INVITATION_MAIL_OPTIONS: InvitationMailOptions = {
  queue: 'member-invitation-mails',
  retryMs: [5_000, 60_000, 600_000, 3_600_000],
  staleAfterMs: 60_000,
  pollMs: 500,
  from: 'Workspace Mail Service <no-reply@localhost>',
  publicUrl: 'http://localhost:3000',
};

interface OwedMail {
  invitation_id: string;
  nonce: string;
  email: string;
  expired: boolean;
  workspace: string;
}

/**
 * Mails owed invitation links (claimed onto the bus like webhook notices) until each is handed
 * over, then marks it sent, so a restart sends nothing already marked. A mail goes twice only when
 * a process dies between the hand-over and the mark, or a send outlasts `staleAfterMs`; both
 * carry the same link. A link that expired while its mail was owed is dropped unsent.
 */
export class MemberInvitationMailProcess {
  private readonly work: DueWork<{ position: string; attempts: number }>;

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; mail: MailSender; key: Buffer },
    private readonly options: InvitationMailOptions = DEFAULT_INVITATION_MAIL_OPTIONS,
  ) {
    this.work = new DueWork<{ position: string; attempts: number }>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'invitation mail' },
      {
        table: 'invitation_mails',
        key: 'position',
        due: 'sent_at IS NULL AND next_attempt_at <= now()',
        order: 'next_attempt_at',
        set: 'attempts = r.attempts + 1',
        returning: 'r.position, r.attempts',
      },
      (m) => ({ id: `mim-${m.position}.${m.attempts}`, payload: { position: m.position, attempts: m.attempts } }),
    );
  }

  start(): Promise<void> {
    return this.work.start((job) => this.handle(job), {
      onError: (error) => console.error('invitation mail:', error),
    });
  }

  stop(): Promise<void> {
    return this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { position, attempts } = job.payload as { position: string; attempts: number };
    const { rows } = await this.deps.pool.query<OwedMail>(
      `SELECT m.invitation_id, m.nonce, m.email, m.invited_at + make_interval(secs => $3::double precision / 1000) <= now() AS expired,
         w.name AS workspace
       FROM invitation_mails m JOIN invitation_mail_workspaces w ON w.workspace_id = m.workspace_id
       WHERE m.position = $1 AND m.attempts = $2 AND m.enqueued_at IS NOT NULL AND m.sent_at IS NULL`,
      [position, attempts, INVITATION_TTL_MS],
    );
    const owed = rows[0];
    if (!owed) return { ack: true };
    if (owed.expired) {
      await this.deps.pool.query('DELETE FROM invitation_mails WHERE position = $1 AND sent_at IS NULL', [position]);
      return { ack: true };
    }
    try {
      await this.send(owed);
    } catch (error) {
      console.error(`invitation mail for ${owed.invitation_id} (try ${attempts}):`, error);
      const delay = this.options.retryMs[Math.min(attempts, this.options.retryMs.length) - 1] ?? 0;
      await this.deps.pool.query(
        `UPDATE invitation_mails SET enqueued_at = NULL, last_error = $3, next_attempt_at = now() + make_interval(secs => $4::double precision / 1000)
         WHERE position = $1 AND attempts = $2`,
        [position, attempts, String((error as Error).message ?? error).slice(0, 300), delay],
      );
      return { ack: true };
    }
    await this.deps.pool.query('UPDATE invitation_mails SET enqueued_at = NULL, sent_at = now() WHERE position = $1', [
      position,
    ]);
    return { ack: true };
  }

  private async send(m: OwedMail): Promise<void> {
    const { workspace } = m;
    const link = `${this.options.publicUrl.replace(/\/+$/, '')}/invitations/${invitationLinks.token(this.deps.key, m.invitation_id, m.nonce)}`;
    await this.deps.mail.send({
      from: this.options.from,
      to: [m.email],
      subject: `You are invited to ${workspace}`.slice(0, 200),
      text:
        `You are invited to join the workspace ${workspace} on the Workspace Mail Service.\n\n` +
        `To accept, open:\n\n${link}\n\n` +
        'The link works for 7 days. If you did not expect this, ignore this mail: nothing happens unless you accept.\n',
      headers: { 'Auto-Submitted': 'auto-generated' },
    });
  }
}
