import { z } from 'zod';
import { queueTaskJob } from '../../../commands/tasks/handlers.ts';
import { newId } from '../../../commands/ids.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { taskJobApprovalOperations } from './approvals.ts';
import { queuedRun, requireModel, runsPage, stepsPage } from './runs.ts';
import {
  idParams,
  jobBody,
  jobOr404,
  ownerOf,
  READ_SCOPES,
  requireToolkitScopes,
  taskRunStepView,
  taskRunView,
  viewTaskRun,
  WRITE_SCOPES,
} from './views.ts';

const readScopes = READ_SCOPES.map((s) => `\`${s}\``).join(', ');

/**
 * One-off jobs: an instruction the assistant runs once, without a saved task. A job is a run with
 * no task (`source` `job`, `taskId` null), worked as any run, under its creator's authority; its id
 * is the run's. The workspace starts at most the plan's `jobsPerDay` of them per UTC day.
 */
export const taskJobOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/task-jobs',
    operationId: 'startTaskJob',
    errors: ['ai_not_configured', 'task_run_limit_reached'],
    summary: 'Start a one-off job',
    description:
      `Scopes: ${WRITE_SCOPES.map((s) => `\`${s}\``).join(', ')}, plus the read and write scopes of each toolkit ` +
      'named (403 `insufficient_scope`, `param` `toolkits`), as a task’s create. Queues a run of the instruction, ' +
      'once, with the run settings of a task (same defaults). The workspace’s one-off jobs of the UTC day are ' +
      'limited (the plan’s; 409 `task_run_limit_reached`). Without an AI model configured, 409 `ai_not_configured`.',
    scope: WRITE_SCOPES,
    body: jobBody,
    status: 202,
    response: taskRunView,
    handler: async ({ credential, body, request }) => {
      requireToolkitScopes(credential, body.toolkits);
      requireModel(deps);
      const runId = newId.taskRun();
      await queueTaskJob(
        deps.commands,
        actorOf(credential, request.id),
        { runId, settings: { ...body, owner: ownerOf(credential) }, jobsPerDay: deps.tasks.limits.jobsPerDay },
        new Date().toISOString(),
      );
      return queuedRun(deps, credential.workspaceId, runId);
    },
  }),

  operation({
    method: 'GET',
    url: '/task-jobs',
    operationId: 'listTaskJobs',
    summary: 'List one-off jobs',
    description: `Scopes: ${readScopes}. The workspace’s one-off jobs, newest first.`,
    scope: READ_SCOPES,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(taskRunView),
    handler: async ({ credential, query }) => runsPage(deps, credential.workspaceId, null, query),
  }),

  operation({
    method: 'GET',
    url: '/task-jobs/:id',
    operationId: 'getTaskJob',
    errors: ['task_run_not_found'],
    summary: 'Get a one-off job',
    description: `Scopes: ${readScopes}. Its run: status, outcome and what it spent.`,
    scope: READ_SCOPES,
    params: idParams,
    response: taskRunView,
    handler: async ({ credential, params }) => viewTaskRun(await jobOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'GET',
    url: '/task-jobs/:id/steps',
    operationId: 'listTaskJobSteps',
    errors: ['task_run_not_found'],
    summary: 'List the steps of a one-off job',
    description: `Scopes: ${readScopes}. In the order taken, as a task run’s steps.`,
    scope: READ_SCOPES,
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(taskRunStepView),
    handler: async ({ credential, params, query }) =>
      stepsPage(deps, credential.workspaceId, await jobOr404(deps.db, credential.workspaceId, params.id), query),
  }),

  ...taskJobApprovalOperations(deps),
];
