import { z } from 'zod';
import { cancelBroadcast, createBroadcast } from '../../../commands/broadcasts/handlers.ts';
import { BROADCAST_AUDIENCES_MAX, BROADCAST_NAME_MAX } from '../../../domain/broadcasts/decide.ts';
import { SUBJECT_MAX } from '../../../domain/emails/rules.ts';
import { findAudience } from '../../../projections/contacts/queries.ts';
import { listBroadcasts } from '../../../projections/broadcasts/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { broadcastOr404, broadcastView, viewBroadcast } from './views.ts';

const createBody = z.strictObject({
  name: z
    .string()
    .max(BROADCAST_NAME_MAX)
    .nullable()
    .optional()
    .describe('For the workspace; recipients never see it.'),
  from: z
    .string()
    .max(998)
    .describe('An enabled address of the workspace, as `a@example.com` or `Name <a@example.com>`.'),
  templateId: z.string().min(1).max(200).describe('A template (`tpl_` id or slug) with a published version.'),
  subject: z.string().max(SUBJECT_MAX).nullable().optional().describe("Replaces the template's subject."),
  audienceIds: z
    .array(z.string().max(64))
    .min(1)
    .max(BROADCAST_AUDIENCES_MAX)
    .describe('The audiences whose contacts receive it; a contact in several receives it once.'),
  scheduledAt: z
    .string()
    .max(64)
    .optional()
    .describe('When to start (ISO 8601 with its zone, at most 30 days ahead); omitted or past: at once.'),
});

const idParams = z.object({ id: z.string() });

export const broadcastOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/broadcasts',
    operationId: 'createBroadcast',
    errors: [
      'invalid_email_address',
      'from_address_forbidden',
      'address_disabled',
      'template_not_found',
      'template_archived',
      'template_not_published',
      'audience_not_found',
      'stream_paused',
    ],
    summary: 'Create a broadcast',
    description:
      "Scope: `emails:send`. Sends the template's published version to the contacts of the audiences, on the broadcast lane, " +
      'at `scheduledAt` or at once. The recipients are taken at the start: contacts in the audiences then, less suppressed ' +
      'addresses and those unsubscribed (from everything or from that audience); each gets the props `email`, `name` and its ' +
      'attributes, and a one-click unsubscribe link leaving the audience it was taken from. Until the start the template cannot be deleted (409 `template_in_use`).',
    scope: 'emails:send',
    body: createBody,
    status: 201,
    response: broadcastView,
    handler: async ({ credential, body, request }) => {
      for (const [i, id] of body.audienceIds.entries())
        if (!(await findAudience(deps.db, credential.workspaceId, id)))
          throw new ApiError('audience_not_found', 'No such audience.', `audienceIds.${i}`);
      const id = await createBroadcast(
        { commands: deps.commands, sending: deps.sending },
        actorOf(credential, request.id),
        credential.mode,
        body,
        new Date(),
      );
      return viewBroadcast(await broadcastOr404(deps.db, credential.workspaceId, id));
    },
  }),

  operation({
    method: 'GET',
    url: '/broadcasts',
    operationId: 'listBroadcasts',
    summary: 'List broadcasts',
    description: 'Scope: `emails:read`. Newest first, with their progress.',
    scope: 'emails:read',
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(broadcastView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: 'broadcasts',
        rows: (after: [string, string] | null, limit) => listBroadcasts(deps.db, credential.workspaceId, limit, after),
        key: createdKey,
        view: viewBroadcast,
      }),
  }),

  operation({
    method: 'GET',
    url: '/broadcasts/:id',
    operationId: 'getBroadcast',
    errors: ['resource_not_found'],
    summary: 'Get a broadcast and its progress',
    description:
      'Scope: `emails:read`. `progress` counts the recipients taken at the start, the emails sent, and what became of them ' +
      '(delivered, bounced, complained, opened, clicked, unsubscribed), each recipient once per outcome.',
    scope: 'emails:read',
    params: idParams,
    response: broadcastView,
    handler: async ({ credential, params }) =>
      viewBroadcast(await broadcastOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'POST',
    url: '/broadcasts/:id/cancel',
    operationId: 'cancelBroadcast',
    errors: ['resource_not_found', 'email_not_cancellable'],
    summary: 'Cancel a broadcast',
    description:
      'Scope: `emails:send`. Only before it starts (409 `email_not_cancellable` after); cancelling a cancelled broadcast answers it again.',
    scope: 'emails:send',
    params: idParams,
    response: broadcastView,
    handler: async ({ credential, params, request }) => {
      const row = await broadcastOr404(deps.db, credential.workspaceId, params.id);
      await cancelBroadcast(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return viewBroadcast(await broadcastOr404(deps.db, credential.workspaceId, row.id));
    },
  }),
];
