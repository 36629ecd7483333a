import { sql } from 'kysely';
import { defineReactor } from '../../projections/projector.ts';
import type { TaskRunWorkTables } from './tables.ts';

/**
 * The scheduling half of task runs: a queued run is due at once; the runner (runner.ts) works it
 * to its end and marks it done. A run waiting for a person's approval is put aside (`waiting`,
 * due when the approval times out); the decision, or its task's deletion, makes it due at once. Never rebuilt: the rows are the state of work done (a replay
 * would run every run again).
 */
export const taskRunWork = defineReactor<TaskRunWorkTables>()({
  name: 'task_run_work',
  version: 5,
  tables: ['task_run_work'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.task_run_work (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      task_id text,
      source text NOT NULL,
      message_id text,
      settings jsonb NOT NULL,
      done boolean NOT NULL DEFAULT false,
      due_at timestamptz NOT NULL,
      waiting boolean NOT NULL DEFAULT false,
      enqueued_at timestamptz,
      seq integer NOT NULL DEFAULT 0
    );
    ALTER TABLE ${s}.task_run_work ADD COLUMN IF NOT EXISTS waiting boolean NOT NULL DEFAULT false;
    ALTER TABLE ${s}.task_run_work ALTER COLUMN task_id DROP NOT NULL;
    CREATE INDEX IF NOT EXISTS task_run_work_due ON ${s}.task_run_work (due_at) WHERE NOT done;`,
  reactsTo: ['TaskRunQueued', 'TaskRunApprovalDecided', 'TaskDeleted'],
  react: async (db, events) => {
    const decided = events.flatMap((e) => (e.type === 'TaskRunApprovalDecided' ? [e.data.runId] : []));
    const deleted = events.flatMap((e) => (e.type === 'TaskDeleted' ? [e.data.taskId] : []));
    const rows = events.flatMap((event) =>
      event.type === 'TaskRunQueued'
        ? [
            {
              id: event.data.runId,
              workspace_id: event.metadata.workspaceId,
              task_id: event.data.taskId,
              source: event.data.source,
              message_id: event.data.messageId,
              settings: JSON.stringify(event.data.settings),
              due_at: event.data.queuedAt,
            },
          ]
        : [],
    );
    if (rows.length > 0)
      await db
        .insertInto('task_run_work')
        .values(rows)
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    // Runs put aside that are due at once: a decided one goes on, and a deleted task's can no
    // longer be approved (the runner ends it). Only a run put aside: one a job holds learns of
    // the decision from its stream.
    if (decided.length > 0 || deleted.length > 0)
      await db
        .updateTable('task_run_work')
        .set({ due_at: sql`now()`, waiting: false, enqueued_at: null })
        .where((eb) =>
          eb.or([
            ...(decided.length > 0 ? [eb('id', 'in', decided)] : []),
            ...(deleted.length > 0 ? [eb('task_id', 'in', deleted)] : []),
          ]),
        )
        .where('done', '=', false)
        .where('waiting', '=', true)
        .execute();
  },
});
