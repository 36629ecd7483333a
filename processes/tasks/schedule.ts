import { type Kysely, sql } from 'kysely';
import { digestId } from '../../domain/shared/ids.ts';
import { canonical } from '../../domain/tasks/decide.ts';
import { mailStartsRun } from '../../domain/tasks/mail.ts';
import { type MailTrigger, runSettingsOf, type Trigger } from '../../domain/tasks/events.ts';
import { nextScheduledRun } from '../../domain/tasks/schedule.ts';
import type { EventType } from '../../domain/registry.ts';
import { defineReactor, type Projected } from '../../projections/projector.ts';
import type { TaskScheduleTables } from './tables.ts';

const nextAfter = (trigger: Trigger, at: string) => nextScheduledRun(trigger, new Date(at));
const isArrival = (e: Projected<EventType>): e is Projected<'MessageReceived'> => e.type === 'MessageReceived';
/** Mail filed as spam never starts a task. */
const spamFiled = (e: Projected<'MessageReceived'>) => e.data.spam.spam || e.data.label === 'spam';
/**
 * The active mail tasks, as task_schedules_mail holds them. `active` is a literal, not a
 * parameter: the index's predicate then holds in the prepared statement's generic plan, which
 * PostgreSQL keeps, rather than planning it anew at every batch of arriving mail (a parameter left
 * the partial index to custom plans).
 */
const ACTIVE_MAIL_TASK = sql<boolean>`active AND trigger->>'kind' = 'mail'`;

const activeMailTasks = (db: Kysely<TaskScheduleTables>, workspaceIds: string[]) =>
  db
    .selectFrom('task_schedules')
    .select(['task_id', 'trigger'])
    .where('workspace_id', 'in', workspaceIds)
    .where(ACTIVE_MAIL_TASK);

/**
 * The scheduling half of tasks: every task has a row, with its next instant while it is active on
 * a schedule; the scheduler (worker.ts) queues the run of a row that falls due and moves it on.
 * A new trigger, or a resume, counts from the time of the change: slots missed while paused are
 * not made up. Arriving mail that a mail trigger matches (`mailStartsRun`; never mail filed as
 * spam, never mail from a domain of the workspace) becomes a row of `task_mail_runs`, queued by
 * the worker. Never rebuilt: the next instants and the runs started are the state of work done.
 */
export const taskSchedule = defineReactor<TaskScheduleTables>()({
  name: 'task_schedule',
  version: 1,
  tables: ['task_schedules', 'task_mail_runs'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.task_schedules (
      task_id text PRIMARY KEY,
      workspace_id text NOT NULL,
      trigger jsonb NOT NULL,
      settings jsonb NOT NULL,
      max_runs_per_day integer NOT NULL,
      active boolean NOT NULL,
      next_run_at timestamptz,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS task_schedules_due ON ${s}.task_schedules (next_run_at)
      WHERE active AND next_run_at IS NOT NULL;
    CREATE INDEX IF NOT EXISTS task_schedules_mail ON ${s}.task_schedules (workspace_id)
      WHERE active AND trigger->>'kind' = 'mail';
    CREATE TABLE IF NOT EXISTS ${s}.task_mail_runs (
      id text PRIMARY KEY,
      task_id text NOT NULL,
      workspace_id text NOT NULL,
      message_id text NOT NULL,
      enqueued_at timestamptz
    );`,
  reactsTo: ['TaskCreated', 'TaskUpdated', 'TaskPaused', 'TaskResumed', 'TaskDeleted', 'MessageReceived'],
  // Arriving mail of workspaces without an active mail task starts nothing: no transaction for it.
  quiet: async (db, events) => {
    if (!events.every(isArrival)) return false;
    const workspaceIds = [...new Set(events.filter((e) => !spamFiled(e)).map((e) => e.metadata.workspaceId))];
    if (workspaceIds.length === 0) return true;
    // A template, not the builder: kysely's builder and compiler cost more CPU than the statement's
    // round trip, at every batch of arriving mail; the text is one prepared statement for any
    // number of workspaces.
    const { rows } = await sql`SELECT 1 FROM task_schedules WHERE workspace_id = ANY(${workspaceIds}::text[])
      AND ${ACTIVE_MAIL_TASK} LIMIT 1`.execute(db);
    return rows.length === 0;
  },
  react: async (db, events) => {
    // The active mail tasks of each workspace, read once per batch: every arriving message asked
    // for them, one statement per message behind every 250. A task event of the workspace drops them.
    const mailTasks = new Map<string, { task_id: string; trigger: unknown }[]>();
    for (const event of events) {
      if (event.type !== 'MessageReceived') mailTasks.delete(event.metadata.workspaceId);
      switch (event.type) {
        case 'TaskCreated': {
          const { owner, paused, createdAt, ...settings } = event.data;
          await db
            .insertInto('task_schedules')
            .values({
              task_id: event.data.taskId,
              workspace_id: event.metadata.workspaceId,
              trigger: JSON.stringify(settings.trigger),
              settings: JSON.stringify(runSettingsOf(settings, owner)),
              max_runs_per_day: settings.maxRunsPerDay,
              active: !paused,
              next_run_at: paused ? null : nextAfter(settings.trigger, createdAt),
            })
            .onConflict((oc) => oc.column('task_id').doNothing())
            .execute();
          break;
        }
        case 'TaskUpdated': {
          const d = event.data;
          const row = await db
            .selectFrom('task_schedules')
            .select(['trigger', 'settings', 'active'])
            .where('task_id', '=', d.taskId)
            .executeTakeFirst();
          if (!row) break;
          const retriggered = canonical(row.trigger) !== canonical(d.trigger);
          await db
            .updateTable('task_schedules')
            .set({
              trigger: JSON.stringify(d.trigger),
              settings: JSON.stringify(runSettingsOf(d, row.settings.owner)),
              max_runs_per_day: d.maxRunsPerDay,
              ...(retriggered
                ? {
                    next_run_at: row.active ? nextAfter(d.trigger, d.updatedAt) : null,
                    enqueued_at: null,
                    seq: sql`seq + 1`,
                  }
                : {}),
            })
            .where('task_id', '=', d.taskId)
            .execute();
          break;
        }
        case 'TaskPaused':
          await db
            .updateTable('task_schedules')
            .set({ active: false, next_run_at: null, enqueued_at: null, seq: sql`seq + 1` })
            .where('task_id', '=', event.data.taskId)
            .execute();
          break;
        case 'TaskResumed': {
          const row = await db
            .selectFrom('task_schedules')
            .select('trigger')
            .where('task_id', '=', event.data.taskId)
            .executeTakeFirst();
          if (!row) break;
          await db
            .updateTable('task_schedules')
            .set({
              active: true,
              next_run_at: nextAfter(row.trigger, event.data.resumedAt),
              enqueued_at: null,
              seq: sql`seq + 1`,
            })
            .where('task_id', '=', event.data.taskId)
            .execute();
          break;
        }
        case 'TaskDeleted':
          await db.deleteFrom('task_schedules').where('task_id', '=', event.data.taskId).execute();
          break;
        case 'MessageReceived': {
          const d = event.data;
          const workspaceId = event.metadata.workspaceId;
          if (spamFiled(event)) break;
          let tasks = mailTasks.get(workspaceId);
          if (tasks === undefined) {
            tasks = await activeMailTasks(db, [workspaceId]).execute();
            mailTasks.set(workspaceId, tasks);
          }
          if (tasks.length === 0) break;
          const from = d.summary.from ?? { name: null, address: d.mailFrom };
          const fromAddress = from.address.toLowerCase();
          const { rows } = await sql<{ own: boolean }>`SELECT EXISTS (SELECT 1 FROM domains
              WHERE workspace_id = ${workspaceId} AND domain = ${fromAddress.split('@').pop() ?? ''}) AS own`.execute(
            db,
          );
          const own = rows[0]?.own === true;
          const mail = { mailbox: d.mailbox.address, fromAddress, fromName: from.name, subject: d.summary.subject };
          const started = tasks.filter((t) => mailStartsRun(t.trigger as MailTrigger, mail, () => own));
          if (started.length === 0) break;
          await db
            .insertInto('task_mail_runs')
            .values(
              started.map((t) => ({
                id: digestId('mailTaskRun', `${t.task_id} ${d.messageId}`),
                task_id: t.task_id,
                workspace_id: workspaceId,
                message_id: d.messageId,
              })),
            )
            .onConflict((oc) => oc.column('id').doNothing())
            .execute();
          break;
        }
      }
    }
  },
});
