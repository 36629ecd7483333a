import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { addSuppression, removeSuppression } from '../../commands/suppressions/handlers.ts';
import { idPatterns } from '../../domain/shared/ids.ts';
import { SUPPRESSION_REASONS } from '../../domain/suppressions/events.ts';
import type { SuppressionEntry } from '../../domain/suppressions/state.ts';
import { findSuppression, listSuppressions, type SuppressionRow } from '../../projections/suppressions/queries.ts';
import { actorOf, isNarrowed, type Credential } from '../credential.ts';
import { ApiError } from '../errors/api-error.ts';
import { lookup } from '../lookups.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../paging.ts';
import { route } from '../route.ts';
import type { ApiDeps } from '../deps.ts';

const tags = ['Suppressions'];

const suppressionView = z.object({
  object: z.literal('suppression'),
  id: z.string(),
  email: z.string(),
  reason: z.enum(SUPPRESSION_REASONS),
  detail: z.string().nullable(),
  removable: z.boolean(),
  createdAt: z.string(),
});

function viewSuppression(row: SuppressionRow): z.infer<typeof suppressionView> {
  return viewEntry({ ...row, suppressionId: row.id, createdAt: row.created_at.toISOString() });
}

/** The view from the entry a command decided on, where the read model is not consulted. */
function viewEntry(e: SuppressionEntry): z.infer<typeof suppressionView> {
  return {
    object: 'suppression',
    id: e.suppressionId,
    email: e.email,
    reason: e.reason,
    detail: e.detail,
    removable: e.removable,
    createdAt: new Date(e.createdAt).toISOString(),
  };
}

const idParams = z.object({ id: z.string() });

/** A malformed id is just another id that names nothing here: 404, never a validation error. */
const suppressionOr404 = lookup(findSuppression, { code: 'resource_not_found', message: 'No such suppression.', param: 'id', pattern: idPatterns.suppression });

/** The list is the whole workspace's, so a key narrowed to some addresses may read it but not change it. */
function refuseNarrowed(credential: Credential): void {
  if (isNarrowed(credential)) {
    throw new ApiError('capability_unsupported', 'A key narrowed to some addresses or domains cannot change the workspace suppression list.', null);
  }
}

export function registerSuppressions(app: FastifyInstance, deps: ApiDeps): void {
  route(app, {
    method: 'GET',
    url: '/suppressions',
    summary: 'List suppressions',
    description: 'Scope: `settings:read`. Newest first. The whole workspace list, also for narrowed keys.',
    tags,
    scope: 'settings:read',
    query: z.strictObject({
      q: z.string().max(320).optional().describe('Substring of the address, reason or detail, ignoring case; `%` and `_` match themselves.'),
      reason: z.enum(SUPPRESSION_REASONS).optional(),
      limit: limitParam(),
      cursor: cursorParam,
    }),
    response: pageSchema(suppressionView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'suppressions',
        rows: (after, limit) => listSuppressions(deps.db, credential.workspaceId, { q: query.q, reason: query.reason }, limit, after),
        key: createdKey,
        view: viewSuppression,
      }),
  });

  route(app, {
    method: 'GET',
    url: '/suppressions/:id',
    summary: 'Read a suppression',
    tags,
    scope: 'settings:read',
    params: idParams,
    response: suppressionView,
    handler: async ({ credential, params }) => viewSuppression(await suppressionOr404(deps.db, credential.workspaceId, params.id)),
  });

  route(app, {
    method: 'POST',
    url: '/suppressions',
    summary: 'Suppress an address',
    description:
      'Scope: `settings:write`. The address is trimmed and lower-cased. 201 with the new entry (reason `manual`), or 200 with the ' +
      'entry already there, whatever its reason. Not for keys narrowed to some addresses or domains (422 `capability_unsupported`).',
    tags,
    scope: 'settings:write',
    body: z.strictObject({ email: z.string().trim().toLowerCase().max(320).pipe(z.email()) }),
    status: 201,
    response: suppressionView,
    handler: async ({ credential, body, request, reply }) => {
      refuseNarrowed(credential);
      const { created, entry } = await addSuppression(
        deps.commands,
        actorOf(credential, request.id),
        { email: body.email, reason: 'manual', detail: null },
        new Date().toISOString(),
      );
      if (!created) reply.code(200);
      return viewEntry(entry);
    },
  });

  route(app, {
    method: 'DELETE',
    url: '/suppressions/:id',
    summary: 'Remove a suppression',
    description:
      'Scope: `settings:write`. A hard bounce is permanent (409 `suppression_not_removable`). Adding the address again later makes a ' +
      'new entry with a new id. Not for keys narrowed to some addresses or domains (422 `capability_unsupported`).',
    tags,
    scope: 'settings:write',
    params: idParams,
    response: z.object({ object: z.literal('suppression'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      refuseNarrowed(credential);
      const row = await suppressionOr404(deps.db, credential.workspaceId, params.id);
      await removeSuppression(deps.commands, actorOf(credential, request.id), { suppressionId: row.id, email: row.email }, new Date().toISOString());
      return { object: 'suppression' as const, id: row.id, deleted: true as const };
    },
  });
}
