import { z } from 'zod';
import { createTask, deleteTask, pauseTask, resumeTask, updateTask } from '../../../commands/tasks/handlers.ts';
import type { Trigger } from '../../../domain/tasks/events.ts';
import { findMailbox } from '../../../projections/addresses/queries.ts';
import { listTasks, type TaskRow } from '../../../projections/tasks/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { taskRunOperations } from './runs.ts';
import { taskApprovalOperations } from './approvals.ts';
import { taskJobOperations } from './jobs.ts';
import {
  createBody,
  idParams,
  ownerOf,
  patchBody,
  READ_SCOPES,
  requireToolkitScopes,
  settingsOf,
  taskOr404,
  taskView,
  type triggerInput,
  viewTask,
  WRITE_SCOPES,
} from './views.ts';

const taskKey = (row: TaskRow): [string, string] => [row.updated_at.toISOString(), row.id];

/** A mail trigger names addresses of the workspace (422 `address_has_no_mailbox` on the one that is not). */
async function checkedTrigger(deps: ApiDeps, workspaceId: string, trigger: z.infer<typeof triggerInput>) {
  if (trigger.kind === 'mail')
    for (const [i, address] of trigger.addresses.entries())
      if (!(await findMailbox(deps.db, workspaceId, address)))
        throw new ApiError(
          'address_has_no_mailbox',
          `${address} is not an address of this workspace.`,
          `trigger.addresses.${i}`,
        );
  return trigger as Trigger;
}

export const taskOperations = (deps: ApiDeps): Operation[] => {
  const reread = async (workspaceId: string, id: string) => viewTask(await taskOr404(deps.db, workspaceId, id));
  const now = () => new Date().toISOString();
  return [
    operation({
      method: 'GET',
      url: '/tasks',
      operationId: 'listTasks',
      summary: 'List tasks',
      description: `Scopes: ${READ_SCOPES.map((s) => `\`${s}\``).join(', ')}. Most recently changed first (settings or status).`,
      scope: READ_SCOPES,
      query: z.strictObject({
        status: z.enum(['active', 'paused']).optional(),
        limit: limitParam(),
        cursor: cursorParam,
      }),
      response: pageSchema(taskView),
      handler: async ({ credential, query }) =>
        deps.cursors.list(credential.workspaceId, query, {
          name: `tasks:changed:${query.status ?? 'all'}`,
          rows: (after: [string, string] | null, limit) =>
            listTasks(deps.db, credential.workspaceId, { status: query.status }, limit, after),
          key: taskKey,
          view: (row) => viewTask(row),
        }),
    }),

    operation({
      method: 'GET',
      url: '/tasks/:id',
      operationId: 'getTask',
      errors: ['task_not_found'],
      summary: 'Read a task',
      scope: READ_SCOPES,
      params: idParams,
      response: taskView,
      handler: async ({ credential, params }) => reread(credential.workspaceId, params.id),
    }),

    operation({
      method: 'POST',
      url: '/tasks',
      operationId: 'createTask',
      errors: ['address_has_no_mailbox', 'task_limit_reached', 'task_active_limit_reached'],
      summary: 'Create a task',
      description:
        `Scopes: ${WRITE_SCOPES.map((s) => `\`${s}\``).join(', ')}, plus the read and write scopes of each toolkit named ` +
        '(403 `insufficient_scope`, `param` `toolkits`). Created active unless `paused` is true; an active task counts ' +
        'against the plan’s active tasks (403 `task_active_limit_reached`), every task against its tasks (403 ' +
        '`task_limit_reached`). A schedule task has `nextRunAt` at once.',
      scope: WRITE_SCOPES,
      body: createBody,
      status: 201,
      response: taskView,
      handler: async ({ credential, body, request }) => {
        const { paused, ...rest } = body;
        requireToolkitScopes(credential, rest.toolkits);
        const trigger = await checkedTrigger(deps, credential.workspaceId, rest.trigger);
        const { taskId } = await createTask(
          deps.commands,
          actorOf(credential, request.id),
          {
            owner: ownerOf(credential),
            settings: { ...rest, trigger },
            paused,
            limits: deps.tasks.limits,
          },
          now(),
        );
        return reread(credential.workspaceId, taskId);
      },
    }),

    operation({
      method: 'PATCH',
      url: '/tasks/:id',
      operationId: 'updateTask',
      errors: ['task_not_found', 'address_has_no_mailbox'],
      summary: 'Update a task',
      description:
        `Scopes: as create. Send only what changes; an empty patch is 422. A new \`trigger\` replaces the old whole ` +
        '(omitted parts return to their defaults). Runs already queued keep the settings they were queued with.',
      scope: WRITE_SCOPES,
      params: idParams,
      body: patchBody,
      response: taskView,
      handler: async ({ credential, params, body, request }) => {
        const row = await taskOr404(deps.db, credential.workspaceId, params.id);
        const patch = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined));
        if (body.toolkits) requireToolkitScopes(credential, body.toolkits);
        const trigger = body.trigger ? await checkedTrigger(deps, credential.workspaceId, body.trigger) : row.trigger;
        await updateTask(
          deps.commands,
          actorOf(credential, request.id),
          row.id,
          { ...settingsOf(row), ...patch, trigger },
          now(),
        );
        return reread(credential.workspaceId, row.id);
      },
    }),

    operation({
      method: 'POST',
      url: '/tasks/:id/pause',
      operationId: 'pauseTask',
      errors: ['task_not_found'],
      summary: 'Pause a task',
      description:
        'Scope: `tasks:write`. Paused with `pausedReason` `user`, `nextRunAt` null; a paused task stays as it is.',
      scope: 'tasks:write',
      params: idParams,
      response: taskView,
      handler: async ({ credential, params, request }) => {
        const row = await taskOr404(deps.db, credential.workspaceId, params.id);
        await pauseTask(deps.commands, actorOf(credential, request.id), row.id, now());
        return reread(credential.workspaceId, row.id);
      },
    }),

    operation({
      method: 'POST',
      url: '/tasks/:id/resume',
      operationId: 'resumeTask',
      errors: ['task_not_found', 'task_active_limit_reached'],
      summary: 'Resume a task',
      description:
        'Scope: `tasks:write`. Active again, within the plan’s active tasks (else 403 `task_active_limit_reached`), ' +
        'whatever paused it; an active task stays as it is.',
      scope: 'tasks:write',
      params: idParams,
      response: taskView,
      handler: async ({ credential, params, request }) => {
        const row = await taskOr404(deps.db, credential.workspaceId, params.id);
        await resumeTask(deps.commands, actorOf(credential, request.id), row.id, deps.tasks.limits, now());
        return reread(credential.workspaceId, row.id);
      },
    }),

    operation({
      method: 'DELETE',
      url: '/tasks/:id',
      operationId: 'deleteTask',
      errors: ['task_not_found'],
      summary: 'Delete a task',
      description: 'Scope: `tasks:write`. Permanent; the record of its runs stays.',
      scope: 'tasks:write',
      params: idParams,
      response: z.object({ object: z.literal('task'), id: z.string(), deleted: z.literal(true) }),
      handler: async ({ credential, params, request }) => {
        const row = await taskOr404(deps.db, credential.workspaceId, params.id);
        await deleteTask(deps.commands, actorOf(credential, request.id), row.id, now());
        return { object: 'task' as const, id: row.id, deleted: true as const };
      },
    }),

    ...taskRunOperations(deps),
    ...taskApprovalOperations(deps),
    ...taskJobOperations(deps),
  ];
};
