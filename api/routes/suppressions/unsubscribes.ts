import { z } from 'zod';
import { removeUnsubscribe, unsubscribe } from '../../../commands/unsubscribes/handlers.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { UNSUBSCRIBE_SOURCES } from '../../../domain/unsubscribes/events.ts';
import type { UnsubscribeEntry } from '../../../domain/unsubscribes/state.ts';
import { findContactByEmail } from '../../../projections/contacts/queries.ts';
import { findUnsubscribe, listUnsubscribes, type UnsubscribeRow } from '../../../projections/unsubscribes/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { lookup } from '../../lookups.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { audienceOr404 } from '../audiences/views.ts';

export const unsubscribeView = z.object({
  object: z.literal('unsubscribe'),
  id: z.string(),
  email: z.string(),
  contactId: z.string().nullable().describe('The contact the address was when it unsubscribed.'),
  audienceId: z.string().nullable().describe('The audience left; null: everything sent on the broadcast lane.'),
  source: z.enum(UNSUBSCRIBE_SOURCES),
  removable: z.boolean().describe('Only unsubscribes recorded through the API; the recipient’s own choice stays.'),
  createdAt: z.string(),
});

function view(e: UnsubscribeEntry & { contactId: string | null }): z.infer<typeof unsubscribeView> {
  return {
    object: 'unsubscribe',
    id: e.unsubscribeId,
    email: e.email,
    contactId: e.contactId,
    audienceId: e.audienceId,
    source: e.source,
    removable: e.source === 'api',
    createdAt: new Date(e.createdAt).toISOString(),
  };
}

export const viewUnsubscribe = (row: UnsubscribeRow) =>
  view({
    unsubscribeId: row.id,
    email: row.email,
    contactId: row.contact_id,
    audienceId: row.audience_id,
    source: row.source,
    createdAt: row.created_at.toISOString(),
  });

const unsubscribeOr404 = lookup(findUnsubscribe, {
  code: 'resource_not_found',
  message: 'No such unsubscribe.',
  param: 'id',
  pattern: idPatterns.unsubscribe,
});

export const unsubscribeOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/suppressions/unsubscribes',
    operationId: 'listUnsubscribes',
    summary: 'List unsubscribes',
    description:
      'Scope: `settings:read`. Newest first. The unsubscribes that hold: from one audience or from everything sent on the ' +
      'broadcast lane (automations, broadcasts), by the recipient’s one-click link or preferences page, or through the API.',
    scope: 'settings:read',
    query: z.strictObject({
      email: z.string().trim().toLowerCase().max(320).optional().describe('One address, ignoring case.'),
      audienceId: z
        .string()
        .max(64)
        .optional()
        .describe('An audience id, or `all` for the unsubscribes from everything.'),
      source: z.enum(UNSUBSCRIBE_SOURCES).optional(),
      limit: limitParam(),
      cursor: cursorParam,
    }),
    response: pageSchema(unsubscribeView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'unsubscribes',
        rows: (after, limit) =>
          listUnsubscribes(
            deps.db,
            credential.workspaceId,
            { email: query.email, audienceId: query.audienceId, source: query.source },
            limit,
            after,
          ),
        key: createdKey,
        view: viewUnsubscribe,
      }),
  }),

  operation({
    method: 'POST',
    url: '/suppressions/unsubscribes',
    operationId: 'createUnsubscribe',
    errors: ['audience_not_found'],
    summary: 'Record an unsubscribe',
    description:
      'Scope: `settings:write`. On the recipient’s behalf (they asked by reply, say): from one audience, or from everything ' +
      'sent on the broadcast lane when `audienceId` is left out. 201 with the new entry (source `api`), or 200 with the one ' +
      'that holds for that scope already, whatever its source.',
    scope: 'settings:write',
    body: z.strictObject({
      email: z.string().trim().toLowerCase().max(320).pipe(z.email()),
      audienceId: z.string().max(64).optional(),
    }),
    status: 201,
    response: unsubscribeView,
    handler: async ({ credential, body, request, reply }) => {
      if (body.audienceId !== undefined) await audienceOr404(deps.db, credential.workspaceId, body.audienceId);
      const contact = await findContactByEmail(deps.db, credential.workspaceId, body.email);
      const contactId = contact?.id ?? null;
      const { created, entry } = await unsubscribe(
        deps.commands,
        actorOf(credential, request.id),
        { email: body.email, contactId, audienceId: body.audienceId ?? null, source: 'api' },
        new Date().toISOString(),
      );
      if (!created) reply.code(200);
      return view({ ...entry, contactId });
    },
  }),

  operation({
    method: 'DELETE',
    url: '/suppressions/unsubscribes/:id',
    operationId: 'deleteUnsubscribe',
    errors: ['resource_not_found', 'unsubscribe_not_removable'],
    summary: 'Remove an unsubscribe',
    description:
      'Scope: `settings:write`. Only an unsubscribe recorded through the API; one the recipient made with their link or on ' +
      'the preferences page is their choice (409 `unsubscribe_not_removable`): only they rejoin, from that page.',
    scope: 'settings:write',
    params: z.object({ id: z.string() }),
    response: z.object({ object: z.literal('unsubscribe'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await unsubscribeOr404(deps.db, credential.workspaceId, params.id);
      await removeUnsubscribe(
        deps.commands,
        actorOf(credential, request.id),
        { unsubscribeId: row.id, email: row.email },
        new Date().toISOString(),
      );
      return { object: 'unsubscribe' as const, id: row.id, deleted: true as const };
    },
  }),
];
