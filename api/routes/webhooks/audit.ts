import { z } from 'zod';
import { webhookAudit } from '../../../projections/webhooks/audit.ts';
import type { ApiDeps } from '../../deps.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { auditEntryView, endpointOr404, idParams, viewAuditEntry } from './views.ts';

/** `/webhooks/:id/audit`: every change of an endpoint, from the event store. */
export const auditOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/webhooks/:id/audit',
    operationId: 'listWebhookAudit',
    errors: ['resource_not_found'],
    summary: 'The audit log of an endpoint',
    description:
      'Scope: `webhooks:read`. Every change of the endpoint, oldest first, from the event store; secrets are never shown.',
    scope: 'webhooks:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(auditEntryView),
    handler: async ({ credential, params, query }) => {
      const row = await endpointOr404(deps.db, credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `webhook-audit:${row.id}`,
        rows: (after: [number] | null, limit) =>
          webhookAudit(deps.history, credential.workspaceId, row.id, after ? Number(after[0]) : -1, limit),
        key: (e) => [e.revision],
        view: viewAuditEntry,
      });
    },
  }),
];
