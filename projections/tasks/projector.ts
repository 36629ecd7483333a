import { type Kysely, type RawBuilder, sql } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { TasksTables } from './tables.ts';

/**
 * Tasks as lists and reads show them, their runs and the runs' steps. Runs stay when their task
 * goes. A task's `lastRunStatus` is its newest queued run's status (`last_run_id`). A one-off
 * job is a run (and its approvals) with no task (`task_id` null).
 */
export const tasksProjector = defineProjector<TasksTables>()({
  name: 'tasks',
  version: 6,
  tables: ['tasks', 'task_runs', 'task_run_steps', 'task_approvals'],
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
      last_run_id text,
      last_run_status text,
      pending_approvals integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.task_runs (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      task_id text,
      source text NOT NULL,
      slot timestamptz,
      message_id text,
      status text NOT NULL,
      settings jsonb NOT NULL,
      queued_at timestamptz NOT NULL,
      started_at timestamptz,
      finished_at timestamptz,
      summary text,
      error jsonb,
      steps integer NOT NULL DEFAULT 0,
      actions integer NOT NULL DEFAULT 0
    );
    CREATE TABLE IF NOT EXISTS ${s}.task_run_steps (
      run_id text NOT NULL,
      step integer NOT NULL,
      workspace_id text NOT NULL,
      kind text NOT NULL,
      turn integer,
      content text,
      tool_calls jsonb,
      call_id text,
      name text,
      arguments text,
      result text,
      error jsonb,
      actions integer NOT NULL DEFAULT 0,
      at timestamptz NOT NULL,
      PRIMARY KEY (run_id, step)
    );
    CREATE TABLE IF NOT EXISTS ${s}.task_approvals (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      task_id text,
      run_id text NOT NULL,
      call_id text NOT NULL,
      tool text NOT NULL,
      arguments text NOT NULL,
      status text NOT NULL,
      requested_at timestamptz NOT NULL,
      decided_at timestamptz
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS tasks_changed ON ${s}.tasks (workspace_id, updated_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS task_runs_newest ON ${s}.task_runs (workspace_id, task_id, queued_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS task_approvals_newest ON ${s}.task_approvals (workspace_id, task_id, requested_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS task_approvals_run ON ${s}.task_approvals (workspace_id, run_id, requested_at DESC, id DESC);`,
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
        UPDATE tasks SET runs_day = ${d.day}, runs_day_count = ${d.count}, last_run_id = ${d.runId},
          last_run_status = 'queued'
        WHERE id = ${d.taskId} AND workspace_id = ${workspaceId} AND EXISTS (SELECT 1 FROM run)`.execute(db);
    },
    TaskRunStarted: async (db, { data: d }) => {
      await runStatus(db, d.runId, 'running', sql`started_at = ${d.startedAt}`);
    },
    TaskRunTurnTaken: async (db, { metadata: { workspaceId }, data: d }) => {
      const { made = d.toolCalls.length } = d;
      const calls = d.toolCalls.map((c, i) => (i < made ? c : { ...c, refused: true as const }));
      await sql`WITH step AS (
          INSERT INTO task_run_steps (run_id, step, workspace_id, kind, turn, content, tool_calls, actions, at)
          VALUES (${d.runId}, ${d.step}, ${workspaceId}, 'model', ${d.turn}, ${d.content}, ${JSON.stringify(calls)},
            ${d.actions}, ${d.at})
          ON CONFLICT DO NOTHING RETURNING step)
        UPDATE task_runs SET steps = ${d.step}, actions = actions + ${d.actions}
        WHERE id = ${d.runId} AND EXISTS (SELECT 1 FROM step)`.execute(db);
    },
    TaskRunToolCallFinished: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`WITH step AS (
          INSERT INTO task_run_steps (run_id, step, workspace_id, kind, call_id, name, arguments, result, error, at)
          VALUES (${d.runId}, ${d.step}, ${workspaceId}, 'tool', ${d.callId}, ${d.name}, ${d.arguments}, ${d.result},
            ${d.error === null ? null : JSON.stringify(d.error)}, ${d.at})
          ON CONFLICT DO NOTHING RETURNING step)
        UPDATE task_runs SET steps = ${d.step} WHERE id = ${d.runId} AND EXISTS (SELECT 1 FROM step)`.execute(db);
    },
    TaskRunApprovalRequested: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`WITH asked AS (
          INSERT INTO task_approvals (id, workspace_id, task_id, run_id, call_id, tool, arguments, status, requested_at)
          VALUES (${d.approvalId}, ${workspaceId}, ${d.taskId}, ${d.runId}, ${d.callId}, ${d.name}, ${d.arguments},
            'pending', ${d.requestedAt})
          ON CONFLICT (id) DO NOTHING RETURNING id),
        run AS (UPDATE task_runs SET status = 'waiting' WHERE id = ${d.runId} AND EXISTS (SELECT 1 FROM asked))
        UPDATE tasks SET pending_approvals = pending_approvals + 1,
          last_run_status = CASE WHEN last_run_id = ${d.runId} THEN 'waiting' ELSE last_run_status END
        WHERE id = ${d.taskId} AND EXISTS (SELECT 1 FROM asked)`.execute(db);
    },
    TaskRunApprovalDecided: async (db, { data: d }) => {
      await sql`WITH decided AS (
          UPDATE task_approvals SET status = ${d.decision}, decided_at = ${d.decidedAt}
          WHERE id = ${d.approvalId} AND status = 'pending' RETURNING id),
        still AS (SELECT EXISTS (SELECT 1 FROM task_approvals
          WHERE run_id = ${d.runId} AND status = 'pending' AND id <> ${d.approvalId}) AS waiting),
        run AS (UPDATE task_runs SET status = CASE WHEN (SELECT waiting FROM still) THEN 'waiting' ELSE 'running' END
          WHERE id = ${d.runId} AND status = 'waiting' AND EXISTS (SELECT 1 FROM decided))
        UPDATE tasks SET pending_approvals = greatest(pending_approvals - 1, 0),
          last_run_status = CASE WHEN last_run_id = ${d.runId} AND last_run_status = 'waiting'
            THEN CASE WHEN (SELECT waiting FROM still) THEN 'waiting' ELSE 'running' END ELSE last_run_status END
        WHERE id = ${d.taskId} AND EXISTS (SELECT 1 FROM decided)`.execute(db);
    },
    TaskRunSucceeded: async (db, { data: d }) => {
      await runStatus(db, d.runId, 'succeeded', sql`finished_at = ${d.finishedAt}, summary = ${d.summary}`);
      await expireApprovals(db, d.taskId, d.runId);
    },
    TaskRunFailed: async (db, { data: d }) => {
      await runStatus(db, d.runId, 'failed', sql`finished_at = ${d.finishedAt}, error = ${JSON.stringify(d.error)}`);
      await expireApprovals(db, d.taskId, d.runId);
    },
  },
});

/** A run's status, and its task's `lastRunStatus` when the run is the task's newest. */
async function runStatus(db: Kysely<TasksTables>, runId: string, status: string, also: RawBuilder<unknown>) {
  await sql`WITH run AS (UPDATE task_runs SET status = ${status}, ${also} WHERE id = ${runId} RETURNING task_id)
    UPDATE tasks SET last_run_status = ${status}
    WHERE id = (SELECT task_id FROM run) AND last_run_id = ${runId}`.execute(db);
}

/** A run that ended with calls still waiting (an approval timed out): they wait no more. */
async function expireApprovals(db: Kysely<TasksTables>, taskId: string | null, runId: string) {
  await sql`WITH expired AS (
      UPDATE task_approvals SET status = 'expired' WHERE run_id = ${runId} AND status = 'pending' RETURNING id)
    UPDATE tasks SET pending_approvals = greatest(pending_approvals - (SELECT count(*) FROM expired), 0)
    WHERE id = ${taskId} AND EXISTS (SELECT 1 FROM expired)`.execute(db);
}
