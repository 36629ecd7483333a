import { sql } from 'kysely';
import type pg from 'pg';
import type { WorkQueue } from '../../infra/bus/port.ts';
import type { MailSender } from '../../infra/mail/port.ts';
import { defineReactor } from '../../projections/projector.ts';
import type { DueWakeups } from '../due-work.ts';
import { OWED_MAIL_DEFAULTS, OwedMailProcess, type OwedMailOptions, publicLink } from '../owed-mails.ts';
import type { TaskNoticeTables } from './tables.ts';

/** What a notice is about: a run that failed or succeeded, a call waiting for an approval. */
export type NoticeKind = 'failed' | 'succeeded' | 'approval';

/**
 * The task's `notify`, as its run copied it: `attention` mails when a run fails or a call waits
 * for an approval, `always` also when a run succeeds, `never` nothing.
 */
const owes = (notify: string, kind: NoticeKind) =>
  notify === 'always' || (notify === 'attention' && kind !== 'succeeded');

/**
 * Follows the log and owes the mails a task's `notify` asks for, in the same transaction as its
 * checkpoint: each run's `notify` and owner are kept when it is queued, and its end or a waiting
 * call owes one mail. Who is mailed is looked up when it is sent (below).
 */
export const taskNoticeMails = defineReactor<TaskNoticeTables>()({
  name: 'task_notice_mails',
  version: 2,
  tables: ['task_notice_runs', 'task_notice_mails'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.task_notice_runs (
      run_id text PRIMARY KEY,
      workspace_id text NOT NULL,
      task_id text,
      notify text NOT NULL,
      owner_kind text NOT NULL,
      owner_id text
    );
    CREATE TABLE IF NOT EXISTS ${s}.task_notice_mails (
      position bigint PRIMARY KEY,
      workspace_id text NOT NULL,
      run_id text NOT NULL,
      kind text NOT NULL,
      detail text,
      attempts integer NOT NULL DEFAULT 0,
      next_attempt_at timestamptz NOT NULL,
      enqueued_at timestamptz,
      last_error text,
      sent_at timestamptz
    );
    ALTER TABLE ${s}.task_notice_runs ALTER COLUMN task_id DROP NOT NULL;
    CREATE INDEX IF NOT EXISTS task_notice_mails_due ON ${s}.task_notice_mails (next_attempt_at) WHERE sent_at IS NULL;`,
  reactsTo: ['TaskRunQueued', 'TaskRunFailed', 'TaskRunSucceeded', 'TaskRunApprovalRequested'],
  async react(db, events) {
    for (const event of events) {
      if (event.type === 'TaskRunQueued') {
        const d = event.data;
        await sql`INSERT INTO task_notice_runs (run_id, workspace_id, task_id, notify, owner_kind, owner_id)
          VALUES (${d.runId}, ${event.metadata.workspaceId}, ${d.taskId}, ${d.settings.notify},
            ${d.settings.owner.kind}, ${d.settings.owner.id})
          ON CONFLICT (run_id) DO NOTHING`.execute(db);
        continue;
      }
      const [kind, detail]: [NoticeKind, string | null] =
        event.type === 'TaskRunFailed'
          ? ['failed', `${event.data.error.code}: ${event.data.error.message}`]
          : event.type === 'TaskRunSucceeded'
            ? ['succeeded', event.data.summary]
            : ['approval', `${event.data.name} ${event.data.arguments}`];
      const run = await db
        .selectFrom('task_notice_runs')
        .select('notify')
        .where('run_id', '=', event.data.runId)
        .executeTakeFirst();
      if (!run || !owes(run.notify, kind)) continue;
      await sql`INSERT INTO task_notice_mails (position, workspace_id, run_id, kind, detail, next_attempt_at)
        VALUES (${event.position}, ${event.metadata.workspaceId}, ${event.data.runId}, ${kind}, ${detail}, now())
        ON CONFLICT (position) DO NOTHING`.execute(db);
    }
  },
});

export const DEFAULT_TASK_NOTICE_OPTIONS: OwedMailOptions = { queue: 'task-notice-mails', ...OWED_MAIL_DEFAULTS };

interface OwedNotice {
  run_id: string;
  /** Null for a one-off job. */
  task_id: string | null;
  kind: NoticeKind;
  detail: string | null;
  /** The task's owner: the person who made it through an app, else the workspace's owner; null when gone. */
  email: string | null;
  task: string | null;
}

/** Notice text past this is cut: a mail says what happened and where to look, not the whole of it. */
const DETAIL_MAX = 1000;

/**
 * Mails owed task notices (processes/owed-mails.ts) to the task's owner: the person whose app
 * made the task, or for a task made with an API key the workspace's owner. A notice with no one to
 * mail any more (the person left) is dropped unsent.
 */
export class TaskNoticeMailProcess extends OwedMailProcess<OwedNotice> {
  constructor(
    deps: { pool: pg.Pool; bus: WorkQueue; wakeups: DueWakeups; mail: MailSender },
    options: OwedMailOptions = DEFAULT_TASK_NOTICE_OPTIONS,
  ) {
    super(
      deps,
      {
        table: 'task_notice_mails',
        label: 'task notice mail',
        jobPrefix: 'tnm',
        owed: async (pool: pg.Pool, position: string, attempts: number) =>
          (
            await pool.query<OwedNotice>(
              `SELECT m.run_id, r.task_id, m.kind, m.detail, t.name AS task,
                 (SELECT p.email FROM memberships p WHERE p.workspace_id = m.workspace_id
                    AND CASE WHEN r.owner_kind = 'oauth' THEN p.user_id = r.owner_id ELSE p.is_owner END
                  LIMIT 1) AS email
               FROM task_notice_mails m JOIN task_notice_runs r ON r.run_id = m.run_id
               LEFT JOIN tasks t ON t.id = r.task_id AND t.workspace_id = m.workspace_id
               WHERE m.position = $1 AND m.attempts = $2 AND m.enqueued_at IS NOT NULL AND m.sent_at IS NULL`,
              [position, attempts],
            )
          ).rows[0],
        lapsed: (n) => n.email === null,
        describe: (n) => `${n.kind} ${n.run_id}`,
        mail: (n, options) => {
          const run = n.task_id === null ? 'Your one-off job' : `A run of your task “${n.task ?? n.task_id}”`;
          const what =
            n.kind === 'failed'
              ? `${run} failed.`
              : n.kind === 'succeeded'
                ? `${run} succeeded.`
                : `${run} waits for your approval of a call.`;
          const detail = (n.detail ?? '').slice(0, DETAIL_MAX);
          const path = n.task_id === null ? `/task-jobs/${n.run_id}` : `/tasks/${n.task_id}/runs/${n.run_id}`;
          const approvals = n.task_id === null ? `/task-jobs/${n.run_id}/approvals` : `/tasks/${n.task_id}/approvals`;
          return {
            to: [n.email as string],
            subject: what.slice(0, 200),
            text:
              `${what}\n\n${detail ? `${detail}\n\n` : ''}` +
              `Run ${n.run_id}: GET ${publicLink(options, path)}\n` +
              (n.kind === 'approval' ? `Approvals: GET ${publicLink(options, approvals)}\n` : ''),
            headers: { 'Auto-Submitted': 'auto-generated' },
          };
        },
      },
      options,
    );
  }
}
