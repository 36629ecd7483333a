import { z } from 'zod';
import { mailboxParam } from '../../schemas.ts';
import { deleteThread, updateThread } from '../../../commands/threads/handlers.ts';
import { LABELS_MAX } from '../../../domain/labels/decide.ts';
import { isSystemLabel, SETTABLE_LABELS, SYSTEM_LABELS } from '../../../domain/threads/events.ts';
import { findLabel } from '../../../projections/threads/labels.ts';
import { listThreads, messagesOf } from '../../../projections/threads/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf } from '../../narrowing.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { booleanParam } from '../../query.ts';
import { operation, type Operation } from '../../route.ts';
import { threadOr404, threadView, threadWithMessagesView, viewMessage, viewThread } from './views.ts';

const idParams = z.object({ id: z.string() });

export const threadOperations = (deps: ApiDeps): Operation[] => {
  const withMessages = async (row: Parameters<typeof viewThread>[0]) => ({
    ...viewThread(row),
    messages: (await messagesOf(deps.db, row.id)).map(viewMessage),
  });
  return [
    operation({
      method: 'GET',
      url: '/threads',
      operationId: 'listThreads',
      errors: ['label_not_found'],
      summary: 'List threads',
      description:
        'Scope: `threads:read`. Latest activity first, across every mailbox the credential reaches or one (`address`). ' +
        '`q` searches subject, participants (names and addresses) and body text with PostgreSQL full-text search ' +
        '(web search syntax: `"exact words"`, `or`, `-word`; whole words, no stemming).',
      scope: 'threads:read',
      query: z.strictObject({
        address: mailboxParam.optional(),
        label: z
          .string()
          .max(400)
          .optional()
          .describe(
            "A system label (`inbox`, `archive`, …; `sent`: threads with mail the mailbox sent) or a custom label's id " +
              '(422 `label_not_found` when none).',
          ),
        unread: booleanParam.optional(),
        q: z.string().trim().min(1).max(200).optional(),
        limit: limitParam(),
        cursor: cursorParam,
      }),
      response: pageSchema(threadView),
      handler: async ({ credential, query }) => {
        const reach = reachOf(credential);
        const system = isSystemLabel(query.label ?? '');
        if (
          query.label !== undefined &&
          !system &&
          !(await findLabel(deps.db, credential.workspaceId, reach, query.label))
        )
          throw new ApiError('label_not_found', `No label \`${query.label}\`.`, 'label');
        const settable = SETTABLE_LABELS.find((l) => l === query.label);
        const filter = {
          address: query.address,
          label: settable,
          sent: query.label === 'sent',
          customLabel: system ? undefined : query.label,
          unread: query.unread,
          q: query.q,
          reach,
        };
        // Drafts are not messages of a thread (they are `/drafts`): nothing is under `drafts`.
        const none = query.label === 'drafts';
        return deps.cursors.list(credential.workspaceId, query, {
          name: 'threads',
          rows: async (after: [string, string] | null, limit) =>
            none ? [] : listThreads(deps.db, credential.workspaceId, filter, limit, after),
          key: (row) => [row.last_message_at.toISOString(), row.id],
          view: viewThread,
        });
      },
    }),

    operation({
      method: 'GET',
      url: '/threads/:id',
      operationId: 'getThread',
      errors: ['resource_not_found'],
      summary: 'Read a thread with its messages',
      description:
        'Scope: `threads:read`. The thread and every message in the order they were filed: addresses, headers, ' +
        'attachments, the authentication results (SPF, DKIM, DMARC, ARC) and the spam verdict.',
      scope: 'threads:read',
      params: idParams,
      response: threadWithMessagesView,
      handler: async ({ credential, params }) =>
        withMessages(await threadOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
    }),

    operation({
      method: 'PATCH',
      url: '/threads/:id',
      operationId: 'updateThread',
      failure: 'thread_update_failed',
      errors: ['resource_not_found', 'label_not_directly_settable', 'label_not_found'],
      summary: 'Mark a thread read or unread, move it, or label it',
      description:
        'Scope: `threads:write`. `unread` marks the whole thread; `label` moves it between inbox, archive, spam and ' +
        'trash (`sent` and `drafts` follow from its messages: 422 `label_not_directly_settable`; any other name is ' +
        "422 `label_not_found`). `addLabels` and `removeLabels` put custom labels of the thread's mailbox on and " +
        'take them off (by id; 422 `label_not_found` naming the item for any other). Everything may be sent together; ' +
        'the labels are checked first, so a refused one changes nothing.',
      scope: 'threads:write',
      params: idParams,
      body: z.strictObject({
        unread: z.boolean().optional(),
        label: z.string().max(100).optional().describe('`inbox`, `archive`, `spam` or `trash`.'),
        addLabels: z.array(z.string().max(400)).max(LABELS_MAX).optional().describe('Custom label ids to put on.'),
        removeLabels: z.array(z.string().max(400)).max(LABELS_MAX).optional().describe('Custom label ids to take off.'),
      }),
      response: threadView,
      handler: async ({ credential, params, body, request }) => {
        const reach = reachOf(credential);
        const row = await threadOr404(deps.db, credential.workspaceId, reach, params.id);
        const actor = actorOf(credential, request.id);
        const now = new Date().toISOString();
        await updateThread(
          deps.commands,
          actor,
          { id: row.id, addressId: row.address_id, domainId: row.domain_id },
          { unread: body.unread, label: body.label, add: body.addLabels, remove: body.removeLabels },
          now,
        );
        return viewThread(await threadOr404(deps.db, credential.workspaceId, reach, row.id));
      },
    }),

    operation({
      method: 'DELETE',
      url: '/threads/:id',
      operationId: 'deleteThread',
      failure: 'thread_delete_failed',
      errors: ['resource_not_found'],
      summary: 'Delete a thread: to the trash, then for good',
      description:
        'Scope: `threads:write`. A thread outside the trash moves there (`deleted: false`, labels `trash`); a thread ' +
        'in the trash is deleted for good (`deleted: true`), and its id answers 404 from then on.',
      scope: 'threads:write',
      params: idParams,
      response: z.object({
        object: z.literal('thread'),
        id: z.string(),
        deleted: z.boolean(),
        labels: z.array(z.enum(SYSTEM_LABELS)),
      }),
      handler: async ({ credential, params, request }) => {
        const row = await threadOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        const { deleted } = await deleteThread(
          deps.commands,
          actorOf(credential, request.id),
          row.id,
          new Date().toISOString(),
        );
        return { object: 'thread' as const, id: row.id, deleted, labels: deleted ? [] : ['trash' as const] };
      },
    }),

    operation({
      method: 'GET',
      url: '/threads/:id/messages/:messageId/raw',
      operationId: 'downloadThreadMessage',
      errors: ['resource_not_found'],
      summary: 'Download a message as it arrived',
      description:
        'Scope: `threads:read`. The stored message (`message/rfc822`): our Return-Path and Received lines, then ' +
        'the bytes the sender handed over.',
      scope: 'threads:read',
      params: z.object({ id: z.string(), messageId: z.string() }),
      produces: 'message/rfc822',
      handler: async ({ credential, params, reply }) => {
        const row = await threadOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        const message = (await messagesOf(deps.db, row.id)).find((m) => m.id === params.messageId);
        const raw = message && (await deps.sending.blobs.get(message.raw_sha256));
        if (!raw) throw new ApiError('resource_not_found', 'No such message in this thread.', 'messageId');
        reply.header('content-type', 'message/rfc822');
        reply.header('content-disposition', `attachment; filename="${message.id}.eml"`);
        return raw;
      },
    }),
  ];
};
