import { z } from 'zod';
import { addSuppression, removeSuppression } from '../../../commands/suppressions/handlers.ts';
import { SUPPRESSION_REASONS } from '../../../domain/suppressions/events.ts';
import { listSuppressions } from '../../../projections/suppressions/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { suppressionOr404, suppressionView, viewEntry, viewSuppression } from './views.ts';

const idParams = z.object({ id: z.string() });

export const suppressionOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/suppressions',
    operationId: 'listSuppressions',
    summary: 'List suppressions',
    description: 'Scope: `settings:read`. Newest first. The whole workspace list.',
    scope: 'settings:read',
    query: z.strictObject({
      q: z
        .string()
        .max(320)
        .optional()
        .describe('Substring of the address, reason or detail, ignoring case; `%` and `_` match themselves.'),
      reason: z.enum(SUPPRESSION_REASONS).optional(),
      limit: limitParam(),
      cursor: cursorParam,
    }),
    response: pageSchema(suppressionView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'suppressions',
        rows: (after, limit) =>
          listSuppressions(deps.db, credential.workspaceId, { q: query.q, reason: query.reason }, limit, after),
        key: createdKey,
        view: viewSuppression,
      }),
  }),

  operation({
    method: 'GET',
    url: '/suppressions/:id',
    operationId: 'getSuppression',
    errors: ['resource_not_found'],
    summary: 'Read a suppression',
    scope: 'settings:read',
    params: idParams,
    response: suppressionView,
    handler: async ({ credential, params }) =>
      viewSuppression(await suppressionOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'POST',
    url: '/suppressions',
    operationId: 'createSuppression',
    errors: ['capability_unsupported'],
    summary: 'Suppress an address',
    description:
      'Scope: `settings:write`. The address is trimmed and lower-cased. 201 with the new entry (reason `manual`), or 200 with the ' +
      'entry already there, whatever its reason. An app connected by anyone but the owner is 422 `capability_unsupported`.',
    scope: 'settings:write',
    body: z.strictObject({ email: z.string().trim().toLowerCase().max(320).pipe(z.email()) }),
    status: 201,
    response: suppressionView,
    handler: async ({ credential, body, request, reply }) => {
      // The spec's rule: the list protects the whole workspace's senders, so only the owner's apps add to it.
      if (credential.kind === 'oauth' && !credential.connectedByOwner)
        throw new ApiError(
          'capability_unsupported',
          'Only an app connected by the workspace owner adds suppressions.',
          null,
        );
      const { created, entry } = await addSuppression(
        deps.commands,
        actorOf(credential, request.id),
        { email: body.email, reason: 'manual', detail: null },
        new Date().toISOString(),
      );
      if (!created) reply.code(200);
      return viewEntry(entry);
    },
  }),

  operation({
    method: 'DELETE',
    url: '/suppressions/:id',
    operationId: 'deleteSuppression',
    errors: ['resource_not_found', 'suppression_not_removable'],
    summary: 'Remove a suppression',
    description:
      'Scope: `settings:write`. A hard bounce is permanent (409 `suppression_not_removable`). Adding the address again later makes a ' +
      'new entry with a new id.',
    scope: 'settings:write',
    params: idParams,
    response: z.object({ object: z.literal('suppression'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await suppressionOr404(deps.db, credential.workspaceId, params.id);
      await removeSuppression(
        deps.commands,
        actorOf(credential, request.id),
        { suppressionId: row.id, email: row.email },
        new Date().toISOString(),
      );
      return { object: 'suppression' as const, id: row.id, deleted: true as const };
    },
  }),
];
