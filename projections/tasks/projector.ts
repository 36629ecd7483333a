import { sql } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { TasksTables } from './tables.ts';

/** Tasks as lists and reads show them, and their runs. Runs stay when their task goes. */
export const tasksProjector = defineProjector<TasksTables>()({
  name: 'tasks',
  version: 2,
  tables: ['tasks', 'task_runs'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.tasks (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      name text NOT NULL,
      instruction text NOT NULL,
      trigger jsonb NOT NULL,
      autonomy text NOT NULL,
      toolkits jsonb NOT NULL,
      model text NOT NULL,
      notify text NOT NULL,
      max_runs_per_day integer NOT NULL,
      max_steps integer NOT NULL,
      status text NOT NULL,
      paused_reason text,
      owner_kind text NOT NULL,
      owner_id text,
      runs_day text,
      runs_day_count integer NOT NULL DEFAULT 0,
      last_run_status text,
      pending_approvals integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.task_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      task_id text NOT NULL,
      source text NOT NULL,
      slot timestamptz,
      message_id text,
      status text NOT NULL,
      settings jsonb NOT NULL,
      queued_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS tasks_changed ON ${s}.tasks (workspace_id, updated_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS task_runs_newest ON ${s}.task_runs (workspace_id, task_id, queued_at DESC, id DESC);`,
  on: {
    TaskCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`INSERT INTO tasks (id, workspace_id, name, instruction, trigger, autonomy, toolkits, model, notify,
          max_runs_per_day, max_steps, status, paused_reason, owner_kind, owner_id, created_at, updated_at)
        VALUES (${d.taskId}, ${workspaceId}, ${d.name}, ${d.instruction}, ${JSON.stringify(d.trigger)}, ${d.autonomy},
          ${JSON.stringify(d.toolkits)}, ${d.model}, ${d.notify}, ${d.maxRunsPerDay}, ${d.maxSteps},
          ${d.paused ? 'paused' : 'active'}, ${d.paused ? 'user' : null}, ${d.owner.kind}, ${d.owner.id},
          ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    TaskUpdated: async (db, { data: d }) => {
      await sql`UPDATE tasks SET name = ${d.name}, instruction = ${d.instruction}, trigger = ${JSON.stringify(d.trigger)},
          autonomy = ${d.autonomy}, toolkits = ${JSON.stringify(d.toolkits)}, model = ${d.model}, notify = ${d.notify},
          max_runs_per_day = ${d.maxRunsPerDay}, max_steps = ${d.maxSteps}, updated_at = ${d.updatedAt}
        WHERE id = ${d.taskId}`.execute(db);
    },
    TaskPaused: async (db, { data: d }) => {
      await sql`UPDATE tasks SET status = 'paused', paused_reason = ${d.reason}, updated_at = ${d.pausedAt}
        WHERE id = ${d.taskId}`.execute(db);
    },
    TaskResumed: async (db, { data: d }) => {
      await sql`UPDATE tasks SET status = 'active', paused_reason = NULL, updated_at = ${d.resumedAt}
        WHERE id = ${d.taskId}`.execute(db);
    },
    TaskDeleted: async (db, { data: d }) => {
      await sql`DELETE FROM tasks WHERE id = ${d.taskId}`.execute(db);
    },
    TaskRunQueued: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`WITH run AS (
          INSERT INTO task_runs (id, workspace_id, task_id, source, slot, message_id, status, settings, queued_at)
          VALUES (${d.runId}, ${workspaceId}, ${d.taskId}, ${d.source}, ${d.slot}, ${d.messageId}, 'queued',
            ${JSON.stringify(d.settings)}, ${d.queuedAt})
          ON CONFLICT (id) DO NOTHING RETURNING id)
        UPDATE tasks SET runs_day = ${d.day}, runs_day_count = ${d.count}, last_run_status = 'queued'
        WHERE id = ${d.taskId} AND workspace_id = ${workspaceId} AND EXISTS (SELECT 1 FROM run)`.execute(db);
    },
  },
});
