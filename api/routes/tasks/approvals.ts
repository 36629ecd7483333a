import { z } from 'zod';
import { decideTaskApproval } from '../../../commands/tasks/runs.ts';
import { findTaskApproval, listTaskApprovals } from '../../../projections/tasks/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { idParams, READ_SCOPES, taskApprovalView, taskOr404, viewTaskApproval } from './views.ts';

const approvalParams = z.strictObject({ id: z.string().max(400), approvalId: z.string().max(400) });

/**
 * Calls of a task's runs that wait for a person (the task's autonomy): listed, approved or
 * denied. A decision is recorded on the run's stream, once; the run then goes on.
 */
export const taskApprovalOperations = (deps: ApiDeps): Operation[] => {
  const decide = (decision: 'approved' | 'denied', verb: 'approve' | 'deny') =>
    operation({
      method: 'POST',
      url: `/tasks/:id/approvals/:approvalId/${verb}`,
      operationId: `${verb}TaskApproval`,
      errors: ['task_not_found', 'task_approval_not_found', 'task_approval_decided', 'task_run_finished'],
      summary: verb === 'approve' ? 'Approve a waiting call' : 'Deny a waiting call',
      description:
        `Scope: \`tasks:write\`. ${verb === 'approve' ? 'The assistant makes the call' : 'The call is not made; the model is told it was denied'}, ` +
        'and the run goes on. Decided once (409 `task_approval_decided`); the run must still be going (409 ' +
        '`task_run_finished`).',
      scope: 'tasks:write',
      params: approvalParams,
      response: taskApprovalView,
      handler: async ({ credential, params, request }) => {
        const task = await taskOr404(deps.db, credential.workspaceId, params.id);
        const found = await findTaskApproval(deps.db, credential.workspaceId, params.approvalId);
        if (!found || found.task_id !== task.id)
          throw new ApiError('task_approval_not_found', 'No such approval of this task.', 'approvalId');
        await decideTaskApproval(
          deps.commands,
          actorOf(credential, request.id),
          { runId: found.run_id, taskId: task.id },
          found.id,
          decision,
        );
        const after = await findTaskApproval(deps.db, credential.workspaceId, found.id);
        if (!after) throw new Error(`approval ${found.id} gone from the read model`);
        return viewTaskApproval(after);
      },
    });
  return [
    operation({
      method: 'GET',
      url: '/tasks/:id/approvals',
      operationId: 'listTaskApprovals',
      errors: ['task_not_found'],
      summary: 'List a task’s approvals',
      description: `Scopes: ${READ_SCOPES.map((s) => `\`${s}\``).join(', ')}. Newest first; \`status\` filters.`,
      scope: READ_SCOPES,
      params: idParams,
      query: z.strictObject({
        status: z.enum(['pending', 'approved', 'denied', 'expired']).optional(),
        limit: limitParam(),
        cursor: cursorParam,
      }),
      response: pageSchema(taskApprovalView),
      handler: async ({ credential, params, query }) => {
        const task = await taskOr404(deps.db, credential.workspaceId, params.id);
        return deps.cursors.list(credential.workspaceId, query, {
          name: `task-approvals:${task.id}:${query.status ?? 'all'}`,
          rows: (after: [string, string] | null, limit) =>
            listTaskApprovals(deps.db, credential.workspaceId, task.id, { status: query.status }, limit, after),
          key: (row) => createdKey({ created_at: row.requested_at, id: row.id }),
          view: viewTaskApproval,
        });
      },
    }),
    decide('approved', 'approve'),
    decide('denied', 'deny'),
  ];
};
