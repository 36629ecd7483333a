import { z } from 'zod';
import { workspaceOfPartition } from '../../../domain/shared/partitions.ts';
import { listEmails, recipientsOf } from '../../../projections/emails/queries.ts';
import { EMAIL_STATUSES } from '../../../projections/emails/tables.ts';
import type { ApiDeps } from '../../deps.ts';
import { reachOf } from '../../narrowing.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { emailView, viewEmail } from '../emails/views.ts';
import { idParams, templateOr404, templateVersionOr422 } from '../templates/views.ts';

export const templateSendsOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/templates/:id/sends',
    operationId: 'listTemplateSends',
    errors: ['resource_not_found', 'template_version_not_found'],
    summary: 'Messages sent with a template',
    description:
      'Scope: `emails:read` (the rows are sent messages with their recipients, as `GET /emails` shows them). Newest first, ' +
      'every message sent with the template, by any way of sending; `version` keeps those of one version (422 ' +
      '`template_version_not_found` for a version the template does not have), `status` those in one standing.',
    scope: 'emails:read',
    params: idParams,
    query: z.strictObject({
      version: z.coerce.number().int().positive().max(2_147_483_647).optional(),
      status: z.enum(EMAIL_STATUSES).optional(),
      limit: limitParam(),
      cursor: cursorParam,
    }),
    response: pageSchema(emailView),
    handler: async ({ credential, params, query }) => {
      const row = await templateOr404(deps.db, workspaceOfPartition(credential.workspaceId), params.id);
      const version =
        query.version === undefined ? undefined : await templateVersionOr422(deps.db, row.id, query.version);
      const filter = {
        status: query.status,
        template: { id: row.id, ...(version ? { versionId: version.id } : {}) },
        reach: reachOf(credential),
      };
      return deps.cursors.list(credential.workspaceId, query, {
        name: `template-sends:${row.id}:${query.version ?? ''}:${query.status ?? ''}`,
        rows: async (after: [string, string] | null, limit) => {
          const rows = await listEmails(deps.db, credential.workspaceId, filter, limit, after);
          const recipients = await recipientsOf(
            deps.db,
            rows.map((r) => r.id),
          );
          return rows.map((r) => ({ row: r, recipients: recipients.filter((x) => x.email_id === r.id) }));
        },
        key: ({ row }) => createdKey(row),
        view: ({ row, recipients }) => viewEmail(row, recipients),
      });
    },
  }),
];
