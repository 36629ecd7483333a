import { z } from 'zod';
import { decideTaskApproval } from '../../../commands/tasks/runs.ts';
import { findTaskApproval, listTaskApprovals, type TaskApprovalRow } from '../../../projections/tasks/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import type { ErrorCode } from '../../errors/catalogue.ts';
import { ApiError } from '../../errors/api-error.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { idParams, jobOr404, READ_SCOPES, taskApprovalView, taskOr404, viewTaskApproval } from './views.ts';

const approvalParams = z.strictObject({ id: z.string().max(400), approvalId: z.string().max(400) });

/** Whose approvals: a task's (of all its runs) or a one-off job's (of its one run). */
interface ApprovalsOf {
  /** The owner's path, `:id` its id. */
  path: string;
  /** In operation ids: `listTaskApprovals`, `approveTaskJobApproval`. */
  noun: 'Task' | 'TaskJob';
  /** In summaries and messages: “a task’s”, “task”. */
  whose: string;
  name: string;
  notFound: ErrorCode;
  /** The owner in the workspace (404 otherwise), as its approvals name it. */
  find(deps: ApiDeps, workspaceId: string, id: string): Promise<{ taskId: string } | { runId: string }>;
}

const ofTask: ApprovalsOf = {
  path: '/tasks/:id',
  noun: 'Task',
  whose: 'a task’s',
  name: 'task',
  notFound: 'task_not_found',
  find: async (deps, workspaceId, id) => ({ taskId: (await taskOr404(deps.db, workspaceId, id)).id }),
};

const ofJob: ApprovalsOf = {
  path: '/task-jobs/:id',
  noun: 'TaskJob',
  whose: 'a one-off job’s',
  name: 'one-off job',
  notFound: 'task_run_not_found',
  find: async (deps, workspaceId, id) => ({ runId: (await jobOr404(deps.db, workspaceId, id)).id }),
};

const belongs = (row: TaskApprovalRow, of: { taskId: string } | { runId: string }) =>
  'taskId' in of ? row.task_id === of.taskId : row.run_id === of.runId;

/**
 * Calls of a task's runs, or of a one-off job, that wait for a person (the autonomy): listed,
 * approved or denied. A decision is recorded on the run's stream, once; the run then goes on.
 */
const approvalOperations = (deps: ApiDeps, of: ApprovalsOf): Operation[] => {
  const decide = (decision: 'approved' | 'denied', verb: 'approve' | 'deny') =>
    operation({
      method: 'POST',
      url: `${of.path}/approvals/:approvalId/${verb}`,
      operationId: `${verb}${of.noun}Approval`,
      errors: [of.notFound, 'task_approval_not_found', 'task_approval_decided', 'task_run_finished'],
      summary: `${verb === 'approve' ? 'Approve' : 'Deny'} a waiting call of a ${of.name}`,
      description:
        `Scope: \`tasks:write\`. ${verb === 'approve' ? 'The assistant makes the call' : 'The call is not made; the model is told it was denied'}, ` +
        'and the run goes on. Decided once (409 `task_approval_decided`); the run must still be going (409 ' +
        '`task_run_finished`).',
      scope: 'tasks:write',
      params: approvalParams,
      response: taskApprovalView,
      handler: async ({ credential, params, request }) => {
        const owner = await of.find(deps, credential.workspaceId, params.id);
        const found = await findTaskApproval(deps.db, credential.workspaceId, params.approvalId);
        if (!found || !belongs(found, owner))
          throw new ApiError('task_approval_not_found', `No such approval of this ${of.name}.`, 'approvalId');
        await decideTaskApproval(
          deps.commands,
          actorOf(credential, request.id),
          { runId: found.run_id, taskId: found.task_id },
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
      url: `${of.path}/approvals`,
      operationId: `list${of.noun}Approvals`,
      errors: [of.notFound],
      summary: `List ${of.whose} approvals`,
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
        const owner = await of.find(deps, credential.workspaceId, params.id);
        return deps.cursors.list(credential.workspaceId, query, {
          name: `task-approvals:${'taskId' in owner ? owner.taskId : owner.runId}:${query.status ?? 'all'}`,
          rows: (after: [string, string] | null, limit) =>
            listTaskApprovals(deps.db, credential.workspaceId, owner, { status: query.status }, limit, after),
          key: (row) => createdKey({ created_at: row.requested_at, id: row.id }),
          view: viewTaskApproval,
        });
      },
    }),
    decide('approved', 'approve'),
    decide('denied', 'deny'),
  ];
};

export const taskApprovalOperations = (deps: ApiDeps): Operation[] => approvalOperations(deps, ofTask);
export const taskJobApprovalOperations = (deps: ApiDeps): Operation[] => approvalOperations(deps, ofJob);
