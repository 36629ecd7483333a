import { z } from 'zod';
import {
  createAudience,
  deleteAudience,
  ensureDefaultAudience,
  updateAudience,
} from '../../../commands/audiences/handlers.ts';
import { addToAudience, removeFromAudience } from '../../../commands/contacts/handlers.ts';
import { AUDIENCE_NAME_MAX, GROWTH_DAYS_MAX } from '../../../domain/audiences/decide.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { audienceGrowth } from '../../../projections/contacts/growth.ts';
import { allAudiences, audienceKey, listAudiences } from '../../../projections/contacts/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam, listByLastId, pageSchema } from '../../paging.ts';
import { listParam } from '../../query.ts';
import { operation, type Operation } from '../../route.ts';
import { text } from '../../schemas.ts';
import { contactOr404 } from '../contacts/views.ts';
import { audienceOr404, audienceView, growthView, membershipView, viewAudience } from './views.ts';

const DESCRIPTION_MAX = 1000;
const idParams = z.object({ id: z.string() });
const name = text(AUDIENCE_NAME_MAX).pipe(z.string().min(1, 'must not be blank'));

/** Membership of one contact in one audience: PUT puts it in, DELETE takes it out. */
const membership = (deps: ApiDeps, method: 'PUT' | 'DELETE') =>
  operation({
    method,
    url: '/audiences/:id/contacts/:email',
    operationId: method === 'PUT' ? 'addAudienceContact' : 'removeAudienceContact',
    errors:
      method === 'PUT'
        ? ['audience_not_found', 'contact_not_found']
        : ['audience_not_found', 'contact_not_found', 'builtin_audience'],
    summary: method === 'PUT' ? 'Add a contact to an audience' : 'Take a contact out of an audience',
    description:
      method === 'PUT'
        ? 'Scope: `audiences:write`. The path holds the address or the contact id. A contact in the audience already stays (200, no change).'
        : 'Scope: `audiences:write`. A contact not in the audience is no error (200, `member: false`). The default audience keeps every contact (409 `builtin_audience`).',
    scope: 'audiences:write',
    params: z.object({ id: z.string(), email: z.string().max(400) }),
    response: membershipView,
    handler: async ({ credential, params, request }) => {
      const audience = await audienceOr404(deps.db, credential.workspaceId, params.id);
      const contact = await contactOr404(deps.db, credential.workspaceId, params.email);
      const input = { email: contact.email, audienceId: audience.id };
      const actor = actorOf(credential, request.id);
      const now = new Date().toISOString();
      if (method === 'PUT') await addToAudience(deps.commands, actor, input, now);
      else await removeFromAudience(deps.commands, actor, input, now);
      return {
        object: 'audience_membership' as const,
        audienceId: audience.id,
        contactId: contact.id,
        email: contact.email,
        member: method === 'PUT',
      };
    },
  });

export const audienceOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/audiences',
    operationId: 'listAudiences',
    summary: 'List audiences',
    description:
      'Scope: `audiences:read`. The default audience first, then newest first. `cursor` is the id of the last audience of the ' +
      'previous page (`nextCursor`); the walk goes on from its place even when it was deleted meanwhile. An id that was never an ' +
      'audience of the workspace is 400 `invalid_cursor`.',
    scope: 'audiences:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(audienceView),
    handler: async ({ credential, query, request }) => {
      await ensureDefaultAudience(deps.commands, actorOf(credential, request.id), new Date().toISOString());
      return listByLastId(query, {
        refused: 'an audience of this workspace',
        after: async (id) =>
          idPatterns.audience.test(id) ? ((await audienceKey(deps.db, credential.workspaceId, id)) ?? null) : null,
        rows: (after, limit) => listAudiences(deps.db, credential.workspaceId, limit, after),
        view: viewAudience,
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/audiences/growth',
    operationId: 'getAudienceGrowth',
    errors: ['audience_not_found'],
    summary: 'Audience growth',
    description:
      'Scope: `audiences:read`. Over the window ending now (`minutes` overrides `days`): per audience `total` (members at the end), ' +
      '`before` (members at the start), `subscribed` (joins in the window), `unsubscribed` (leaves: taken out, or the contact ' +
      'deleted), `added` (net: subscribed − unsubscribed, so total = before + added) and sparse `buckets` oldest first keyed by ' +
      'local time (`offsetMinutes` east of UTC). `totals.contacts` counts each person once; `busiest` is the bucket with the most joins and leaves.',
    scope: 'audiences:read',
    query: z.strictObject({
      audienceIds: listParam(z.string().max(64), 50).optional(),
      days: z.coerce.number().int().min(1).max(GROWTH_DAYS_MAX).default(30),
      minutes: z.coerce.number().int().min(1).max(1_576_800).optional(),
      grain: z.enum(['minute', 'hour', 'day']).default('day'),
      offsetMinutes: z.coerce.number().int().min(-840).max(840).default(0),
    }),
    response: growthView,
    handler: async ({ credential, query, request }) => {
      await ensureDefaultAudience(deps.commands, actorOf(credential, request.id), new Date().toISOString());
      const all = await allAudiences(deps.db, credential.workspaceId);
      let selected = all;
      if (query.audienceIds && query.audienceIds.length > 0) {
        const byId = new Map(all.map((a) => [a.id, a]));
        selected = [...new Set(query.audienceIds)].map((id) => {
          const row = byId.get(id);
          if (!row)
            throw new ApiError(
              'audience_not_found',
              'No such audience.',
              `audienceIds.${query.audienceIds!.indexOf(id)}`,
            );
          return row;
        });
      }
      const until = new Date();
      const since = new Date(
        until.getTime() - (query.minutes !== undefined ? query.minutes * 60_000 : query.days * 86_400_000),
      );
      return {
        object: 'audience_growth' as const,
        ...(await audienceGrowth(deps.db, selected, {
          since,
          until,
          grain: query.grain,
          offsetMinutes: query.offsetMinutes,
        })),
      };
    },
  }),

  operation({
    method: 'GET',
    url: '/audiences/:id',
    operationId: 'getAudience',
    errors: ['audience_not_found'],
    summary: 'Read an audience',
    description:
      'Scope: `audiences:read`. `contactCount` is counted at read (the live membership count, read-your-writes).',
    scope: 'audiences:read',
    params: idParams,
    response: audienceView,
    handler: async ({ credential, params }) =>
      viewAudience(await audienceOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'POST',
    url: '/audiences',
    operationId: 'createAudience',
    errors: ['workspace_limit_reached'],
    summary: 'Create an audience',
    description:
      'Scope: `audiences:write`. Names are trimmed, 1 to 120 characters, not unique. At most 100 audiences besides the default one (422 `workspace_limit_reached`).',
    scope: 'audiences:write',
    body: z.strictObject({
      name,
      description: text(DESCRIPTION_MAX).nullable().optional(),
      showOnPreferences: z.boolean().optional(),
    }),
    status: 201,
    response: audienceView,
    handler: async ({ credential, body, request }) => {
      const id = await createAudience(
        deps.commands,
        actorOf(credential, request.id),
        { name: body.name, description: body.description ?? null, showOnPreferences: body.showOnPreferences ?? false },
        new Date().toISOString(),
      );
      return viewAudience(await audienceOr404(deps.db, credential.workspaceId, id));
    },
  }),

  operation({
    method: 'PATCH',
    url: '/audiences/:id',
    operationId: 'updateAudience',
    errors: ['audience_not_found'],
    summary: 'Update an audience',
    description:
      'Scope: `audiences:write`. Omitted keeps; null clears `description`. The default audience may be renamed too.',
    scope: 'audiences:write',
    params: idParams,
    body: z.strictObject({
      name: name.optional(),
      description: text(DESCRIPTION_MAX).nullable().optional(),
      showOnPreferences: z.boolean().optional(),
    }),
    response: audienceView,
    handler: async ({ credential, params, body, request }) => {
      const row = await audienceOr404(deps.db, credential.workspaceId, params.id);
      await updateAudience(
        deps.commands,
        actorOf(credential, request.id),
        { audienceId: row.id, ...body },
        new Date().toISOString(),
      );
      return viewAudience(await audienceOr404(deps.db, credential.workspaceId, row.id));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/audiences/:id',
    operationId: 'deleteAudience',
    stepUp: true,
    errors: ['audience_not_found', 'builtin_audience'],
    summary: 'Delete an audience',
    description:
      'Scope: `audiences:write`. Its contacts stay in the book. The default audience cannot be deleted (409 `builtin_audience`).',
    scope: 'audiences:write',
    params: idParams,
    response: z.object({ object: z.literal('audience'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await audienceOr404(deps.db, credential.workspaceId, params.id);
      await deleteAudience(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { object: 'audience' as const, id: row.id, deleted: true as const };
    },
  }),

  membership(deps, 'PUT'),
  membership(deps, 'DELETE'),
];
