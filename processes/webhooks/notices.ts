import type pg from 'pg';
import type { Delivery as Job, JobOutcome, WorkQueue } from '../../infra/bus/port.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { workspaceOfPartition } from '../../domain/shared/partitions.ts';
import { FAILURES_TO_DISABLE } from '../../domain/webhooks/decide.ts';
import { DueWork, type DueWakeups } from '../due-work.ts';

export interface WebhookNoticeOptions {
  /** The bus queue of notice jobs; one per database (jobs name rows of it). */
  queue: string;
  /** Delay before the next try after try n failed; the last one repeats until the notice is sent. */
  retryMs: number[];
  /** A job enqueued this long ago without an outcome is enqueued again. */
  staleAfterMs: number;
  pollMs: number;
  /** The sender of the notices. */
  from: string;
}

export const DEFAULT_NOTICE_OPTIONS: WebhookNoticeOptions = {
  queue: 'webhook-notices',
  retryMs: [5_000, 60_000, 600_000, 3_600_000],
  staleAfterMs: 60_000,
  // Switch-offs are rare and a notice may take a second: no need to ask as often as for deliveries.
  pollMs: 1_000,
  from: 'Workspace Mail Service <no-reply@localhost>',
};

interface Notice {
  workspace_id: string;
  endpoint_id: string;
  reason: string;
  disabled_at: Date;
  url: string | null;
}

const WHY: Record<string, string> = {
  consecutive_failures: `${FAILURES_TO_DISABLE} deliveries in a row failed.`,
  gone: 'The receiver answered 410 Gone.',
};

/**
 * Mails the workspace owner and every member whose role can read webhooks when deliveries switch
 * an endpoint off. dispatch.ts writes the owed notice in the same transaction as it follows the
 * `WebhookEndpointDisabled` event, so no switch-off goes unnoticed whichever process wrote it;
 * here due notices are claimed onto the bus (like deliveries) and tried until the mail is handed
 * over, then marked sent. A notice is mailed twice only when a process dies between the hand-over
 * and the mark, or a send outlasts `staleAfterMs`.
 */
export class WebhookNoticeProcess {
  private readonly work: DueWork<{ position: string; attempts: number }>;

  constructor(
    private readonly deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; mail: MailSender },
    private readonly options: WebhookNoticeOptions = DEFAULT_NOTICE_OPTIONS,
  ) {
    this.work = new DueWork<{ position: string; attempts: number }>(
      deps,
      options.queue,
      { pollMs: options.pollMs, staleAfterMs: options.staleAfterMs, label: 'webhook notice' },
      {
        table: 'webhook_notices',
        key: 'position',
        waiting: 'sent_at IS NULL',
        when: 'next_attempt_at',
        order: 'next_attempt_at',
        set: 'attempts = r.attempts + 1',
        returning: 'r.position, r.attempts',
      },
      (n) => ({ id: `whn-${n.position}.${n.attempts}`, payload: { position: n.position, attempts: n.attempts } }),
    );
  }

  start(): Promise<void> {
    return this.work.start((job) => this.handle(job), { onError: (error) => console.error('webhook notice:', error) });
  }

  stop(): Promise<void> {
    return this.work.stop();
  }

  private async handle(job: Job): Promise<JobOutcome> {
    const { position, attempts } = job.payload as { position: string; attempts: number };
    // Only the try the job was made for, while it is on the bus; a duplicate of a finished one finds nothing.
    const { rows } = await this.deps.pool.query<Notice>(
      `SELECT n.workspace_id, n.endpoint_id, n.reason, n.disabled_at, e.url
       FROM webhook_notices n LEFT JOIN webhook_endpoints e ON e.id = n.endpoint_id
       WHERE n.position = $1 AND n.attempts = $2 AND n.enqueued_at IS NOT NULL AND n.sent_at IS NULL`,
      [position, attempts],
    );
    const notice = rows[0];
    if (!notice) return { ack: true };
    try {
      await this.send(notice);
    } catch (error) {
      console.error(`webhook notice for ${notice.endpoint_id} (try ${attempts}):`, error);
      const delay = this.options.retryMs[Math.min(attempts, this.options.retryMs.length) - 1] ?? 0;
      await this.deps.pool.query(
        `UPDATE webhook_notices SET enqueued_at = NULL, last_error = $3, next_attempt_at = now() + make_interval(secs => $4::double precision / 1000)
         WHERE position = $1 AND attempts = $2`,
        [position, attempts, String((error as Error).message ?? error).slice(0, 300), delay],
      );
      return { ack: true };
    }
    await this.deps.pool.query('UPDATE webhook_notices SET enqueued_at = NULL, sent_at = now() WHERE position = $1', [
      position,
    ]);
    return { ack: true };
  }

  private async send(n: Notice): Promise<void> {
    // A test-mode endpoint lives in the workspace's test partition; the same people hear of it.
    const workspaceId = workspaceOfPartition(n.workspace_id);
    const kind = workspaceId === n.workspace_id ? 'webhook endpoint' : 'test-mode webhook endpoint';
    const to = await this.recipients(workspaceId);
    // The owner is always one: none means the workspaces read model has not got this far yet.
    if (to.length === 0) throw new Error(`no recipients in workspace ${workspaceId} yet`);
    await this.deps.mail.send({
      from: this.options.from,
      to,
      subject: `A ${kind} of your workspace was disabled`,
      text:
        `The ${kind} ${n.endpoint_id}${n.url ? ` (${n.url})` : ''} was disabled at ${n.disabled_at.toISOString()}.\n\n${WHY[n.reason] ?? n.reason}\n\n` +
        'No more events are sent to it. Fix the receiver, then enable the endpoint again (PATCH /webhooks/{id} with "enabled": true) ' +
        'and replay the failed deliveries (POST /webhooks/{id}/replay).\n',
    });
  }

  /** The workspace owner and every member whose role can read webhooks, as they stand when the notice goes. */
  private async recipients(workspaceId: string): Promise<string[]> {
    const { rows } = await this.deps.pool.query<{ email: string }>(
      `SELECT owner_email AS email FROM workspaces WHERE id = $1
       UNION
       SELECT m.email FROM memberships m JOIN roles r ON r.id = m.role_id
       WHERE m.workspace_id = $1 AND 'webhooks:read' = ANY(r.permissions)`,
      [workspaceId],
    );
    return rows.map((r) => r.email).sort();
  }
}
