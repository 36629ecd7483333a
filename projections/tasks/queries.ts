import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { TasksTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type TaskRow = Selectable<TasksTables['tasks']>;
export type TaskRunRow = Selectable<TasksTables['task_runs']>;
export type TaskRunStepRow = Selectable<TasksTables['task_run_steps']>;
export type TaskApprovalRow = Selectable<TasksTables['task_approvals']>;

export async function findTask(db: Db, workspaceId: string, id: string): Promise<TaskRow | undefined> {
  return db
    .selectFrom('tasks')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Most recently changed first: `(updated_at, id)` descending, after the cursor's. */
export async function listTasks(
  db: Db,
  workspaceId: string,
  filter: { status?: 'active' | 'paused' },
  limit: number,
  after: [string, string] | null,
): Promise<TaskRow[]> {
  const { rows } = await sql<TaskRow>`SELECT * FROM tasks
    WHERE workspace_id = ${workspaceId}
      ${filter.status ? sql`AND status = ${filter.status}` : sql``}
      ${after ? sql`AND (updated_at, id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY updated_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

/** One task's runs, or with `taskId` null the workspace's one-off jobs, newest first: `(queued_at, id)` descending. */
export async function listTaskRuns(
  db: Db,
  workspaceId: string,
  taskId: string | null,
  limit: number,
  after: [string, string] | null,
): Promise<TaskRunRow[]> {
  const { rows } = await sql<TaskRunRow>`SELECT * FROM task_runs
    WHERE workspace_id = ${workspaceId} AND ${taskId === null ? sql`task_id IS NULL` : sql`task_id = ${taskId}`}
      ${after ? sql`AND (queued_at, id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY queued_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

export async function findTaskRun(db: Db, workspaceId: string, id: string): Promise<TaskRunRow | undefined> {
  return db
    .selectFrom('task_runs')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** A one-off job: a run of the workspace with no task. */
export async function findTaskJob(db: Db, workspaceId: string, id: string): Promise<TaskRunRow | undefined> {
  return db
    .selectFrom('task_runs')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .where('task_id', 'is', null)
    .executeTakeFirst();
}

/** A run's steps in the order taken, after the step number of the cursor. */
export async function listTaskRunSteps(
  db: Db,
  workspaceId: string,
  runId: string,
  limit: number,
  after: number | null,
): Promise<TaskRunStepRow[]> {
  return db
    .selectFrom('task_run_steps')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('run_id', '=', runId)
    .$if(after !== null, (q) => q.where('step', '>', after as number))
    .orderBy('step')
    .limit(limit + 1)
    .execute();
}

export async function findTaskApproval(db: Db, workspaceId: string, id: string): Promise<TaskApprovalRow | undefined> {
  return db
    .selectFrom('task_approvals')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/**
 * A task's approvals, or a one-off job's (its run's), newest first: `(requested_at, id)`
 * descending; of one status only when asked.
 */
export async function listTaskApprovals(
  db: Db,
  workspaceId: string,
  of: { taskId: string } | { runId: string },
  filter: { status?: TaskApprovalRow['status'] },
  limit: number,
  after: [string, string] | null,
): Promise<TaskApprovalRow[]> {
  const { rows } = await sql<TaskApprovalRow>`SELECT * FROM task_approvals
    WHERE workspace_id = ${workspaceId}
      AND ${'taskId' in of ? sql`task_id = ${of.taskId}` : sql`run_id = ${of.runId}`}
      ${filter.status ? sql`AND status = ${filter.status}` : sql``}
      ${after ? sql`AND (requested_at, id) < (${after[0]}::timestamptz, ${after[1]})` : sql``}
    ORDER BY requested_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}
