import { z } from 'zod';
import { queueTaskRun } from '../../../commands/tasks/handlers.ts';
import { newId } from '../../../commands/ids.ts';
import { runSettingsOf } from '../../../domain/tasks/events.ts';
import { findTaskRun, listTaskRunSteps, listTaskRuns } from '../../../projections/tasks/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import {
  idParams,
  READ_SCOPES,
  settingsOf,
  taskOr404,
  taskRunStepView,
  taskRunView,
  viewTaskRun,
  viewTaskRunStep,
} from './views.ts';

const runParams = z.strictObject({ id: z.string().max(400), runId: z.string().max(400) });

/** The task, then its run: a run of another task (or workspace) answers as a missing one. */
async function runOr404(deps: ApiDeps, workspaceId: string, params: z.infer<typeof runParams>) {
  const task = await taskOr404(deps.db, workspaceId, params.id);
  const run = await findTaskRun(deps.db, workspaceId, params.runId);
  if (!run || run.task_id !== task.id) throw new ApiError('task_run_not_found', 'No such run of this task.', 'runId');
  return run;
}

/** Runs are worked by the AI model: without one, queuing a run is 409 `ai_not_configured`. */
export function requireModel(deps: ApiDeps): void {
  if (!deps.ai.model)
    throw new ApiError('ai_not_configured', 'Tasks are run by an AI model, and none is configured.', null);
}

/** The run just queued, as the read model holds it (the command waited for it). */
export async function queuedRun(deps: ApiDeps, workspaceId: string, runId: string) {
  const run = await findTaskRun(deps.db, workspaceId, runId);
  if (!run) throw new Error(`run ${runId} not in the read model after its write`);
  return viewTaskRun(run);
}

/** A task's runs: run now, and the list of them. */
export const taskRunOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/tasks/:id/runs',
    operationId: 'runTask',
    errors: ['task_not_found', 'ai_not_configured', 'task_run_limit_reached'],
    summary: 'Run a task now',
    description:
      'Scope: `tasks:write`. Queues a run of the task with its current settings, whatever its trigger or status. It ' +
      'counts against the task’s `maxRunsPerDay` of the UTC day (409 `task_run_limit_reached`). Without an AI model ' +
      'configured, 409 `ai_not_configured`.',
    scope: 'tasks:write',
    params: idParams,
    status: 202,
    response: taskRunView,
    handler: async ({ credential, params, request }) => {
      const row = await taskOr404(deps.db, credential.workspaceId, params.id);
      requireModel(deps);
      const runId = newId.taskRun();
      await queueTaskRun(
        deps.commands,
        actorOf(credential, request.id),
        {
          runId,
          taskId: row.id,
          source: 'manual',
          slot: null,
          messageId: null,
          maxRunsPerDay: row.max_runs_per_day,
          settings: runSettingsOf(settingsOf(row), { kind: row.owner_kind, id: row.owner_id }),
        },
        new Date().toISOString(),
      );
      return queuedRun(deps, credential.workspaceId, runId);
    },
  }),

  operation({
    method: 'GET',
    url: '/tasks/:id/runs',
    operationId: 'listTaskRuns',
    errors: ['task_not_found'],
    summary: 'List a task’s runs',
    description: `Scopes: ${READ_SCOPES.map((s) => `\`${s}\``).join(', ')}. Newest first.`,
    scope: READ_SCOPES,
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(taskRunView),
    handler: async ({ credential, params, query }) => {
      const task = await taskOr404(deps.db, credential.workspaceId, params.id);
      return runsPage(deps, credential.workspaceId, task.id, query);
    },
  }),

  operation({
    method: 'GET',
    url: '/tasks/:id/runs/:runId',
    operationId: 'getTaskRun',
    errors: ['task_not_found', 'task_run_not_found'],
    summary: 'Get a run of a task',
    description: `Scopes: ${READ_SCOPES.map((s) => `\`${s}\``).join(', ')}. Its status, outcome and what it spent.`,
    scope: READ_SCOPES,
    params: runParams,
    response: taskRunView,
    handler: async ({ credential, params }) => viewTaskRun(await runOr404(deps, credential.workspaceId, params)),
  }),

  operation({
    method: 'GET',
    url: '/tasks/:id/runs/:runId/steps',
    operationId: 'listTaskRunSteps',
    errors: ['task_not_found', 'task_run_not_found'],
    summary: 'List the steps of a run',
    description:
      `Scopes: ${READ_SCOPES.map((s) => `\`${s}\``).join(', ')}. In the order taken: each turn of the model ` +
      '(`model`) and each tool call it asked for (`tool`), with what the model was told.',
    scope: READ_SCOPES,
    params: runParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(taskRunStepView),
    handler: async ({ credential, params, query }) =>
      stepsPage(deps, credential.workspaceId, await runOr404(deps, credential.workspaceId, params), query),
  }),
];

/** A task's runs, or with `taskId` null the workspace's one-off jobs, newest first: a page of them. */
export const runsPage = (
  deps: ApiDeps,
  workspaceId: string,
  taskId: string | null,
  query: { limit: number; cursor?: string | undefined },
) =>
  deps.cursors.list(workspaceId, query, {
    name: taskId === null ? 'task-jobs' : `task-runs:${taskId}`,
    rows: (after: [string, string] | null, limit) => listTaskRuns(deps.db, workspaceId, taskId, limit, after),
    key: (row) => createdKey({ created_at: row.queued_at, id: row.id }),
    view: viewTaskRun,
  });

/** A run's steps in the order taken, a page of them (a task's run or a one-off job). */
export const stepsPage = (
  deps: ApiDeps,
  workspaceId: string,
  run: { id: string },
  query: { limit: number; cursor?: string | undefined },
) =>
  deps.cursors.list(workspaceId, query, {
    name: `task-run-steps:${run.id}`,
    rows: (after: [number] | null, limit) => listTaskRunSteps(deps.db, workspaceId, run.id, limit, after?.[0] ?? null),
    key: (row) => [row.step] as [number],
    view: viewTaskRunStep,
  });
