import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { hashSecret } from '../../../commands/api-keys/token.ts';
import { createTempInbox, TEMP_INBOX_TOKEN_PREFIX } from '../../../commands/temp-inboxes/handlers.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { networkOf } from '../../../domain/temp-inboxes/rules.ts';
import {
  findTempInbox,
  findTempInboxMessage,
  listTempInboxMessages,
} from '../../../projections/temp-inboxes/queries.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { type Operation, openOperation, type Resource } from '../../route.ts';
import {
  createdTempInboxView,
  tempInboxMessageView,
  tempInboxMessageViewOf,
  tempInboxView,
  tempInboxViewOf,
} from './views.ts';

const inboxParams = z.strictObject({ id: z.string().max(100) });
const messageParams = z.strictObject({ id: z.string().max(100), messageId: z.string().max(100) });
const pageQuery = z.strictObject({ limit: limitParam(100, 25), cursor: cursorParam });

const notFound = () => new ApiError('resource_not_found', 'No such disposable inbox, or not this token’s.', null, 404);

function tempMailOperations(deps: ApiDeps): Operation[] {
  const { domain, lifetimeMs } = deps.tempMail;

  /** The inbox the request's token opens; a foreign, wrong or expired token, or no such inbox, is one 404. */
  const inboxOf = async (request: FastifyRequest, inboxId: string) => {
    const header = request.headers.authorization;
    if (!header)
      throw new ApiError('missing_api_key', "Send the inbox's access token as `Authorization: Bearer <token>`.");
    const token = /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1];
    if (!token?.startsWith(TEMP_INBOX_TOKEN_PREFIX) || !idPatterns.tempInbox.test(inboxId)) throw notFound();
    const inbox = await findTempInbox(deps.db, inboxId, hashSecret(token), new Date());
    if (!inbox) throw notFound();
    return inbox;
  };

  const messageOf = async (request: FastifyRequest, params: z.infer<typeof messageParams>) => {
    const inbox = await inboxOf(request, params.id);
    const row = await findTempInboxMessage(deps.db, inbox.id, params.messageId);
    if (!row) throw notFound();
    return row;
  };

  const reads = ['missing_api_key', 'resource_not_found'] as const;

  return [
    openOperation({
      open: 'anyone',
      method: 'POST',
      url: '/temp-mail/inboxes',
      operationId: 'createTempInbox',
      summary: 'Create a disposable inbox',
      description:
        'Needs no credential. An inbox on the service’s disposable domain that lives an hour, with its access ' +
        'token, shown only here. 10 per 10 minutes per network (IPv4 /24, IPv6 /56), else 429 ' +
        '`temp_inbox_rate_limited` with Retry-After; 409 `temp_mail_not_configured` when the service has no ' +
        'disposable domain. Such an inbox only receives.',
      status: 201,
      response: createdTempInboxView,
      errors: ['temp_inbox_rate_limited', 'temp_mail_not_configured'],
      handler: async ({ request, reply }) => {
        if (domain === null)
          throw new ApiError(
            'temp_mail_not_configured',
            'This service has no disposable domain (`TEMP_MAIL_DOMAIN`).',
            null,
            409,
          );
        // A socket's address is always one; the whole address is only a fallback for the unforeseen.
        const network = networkOf(request.ip) ?? request.ip;
        const created = await createTempInbox(
          deps.commands,
          { network, domain, lifetimeMs, requestId: request.id },
          new Date().toISOString(),
        );
        reply.header('cache-control', 'no-store');
        return {
          object: 'temp_inbox',
          id: created.inboxId,
          address: created.address,
          token: created.token,
          createdAt: created.createdAt,
          expiresAt: created.expiresAt,
        };
      },
    }),

    openOperation({
      open: 'tempInboxToken',
      method: 'GET',
      url: '/temp-mail/inboxes/:id',
      operationId: 'getTempInbox',
      summary: 'Read a disposable inbox',
      params: inboxParams,
      response: tempInboxView,
      errors: [...reads],
      handler: async ({ request, params }) => tempInboxViewOf(await inboxOf(request, params.id)),
    }),

    openOperation({
      open: 'tempInboxToken',
      method: 'GET',
      url: '/temp-mail/inboxes/:id/messages',
      operationId: 'listTempInboxMessages',
      summary: 'List the messages of a disposable inbox',
      params: inboxParams,
      query: pageQuery,
      response: pageSchema(tempInboxMessageView),
      errors: [...reads],
      handler: async ({ request, params, query }) => {
        const inbox = await inboxOf(request, params.id);
        // Cursors are bound to the inbox, as others' are to the workspace.
        return deps.cursors.list(inbox.id, query, {
          name: 'temp-inbox-messages',
          rows: (after: [string, string] | null, limit) =>
            listTempInboxMessages(deps.db, inbox.id, limit, after && { receivedAt: after[0], id: after[1] }),
          key: (row) => [row.received_at.toISOString(), row.id] as [string, string],
          view: tempInboxMessageViewOf,
        });
      },
    }),

    openOperation({
      open: 'tempInboxToken',
      method: 'GET',
      url: '/temp-mail/inboxes/:id/messages/:messageId',
      operationId: 'getTempInboxMessage',
      summary: 'Read a message of a disposable inbox',
      params: messageParams,
      response: tempInboxMessageView,
      errors: [...reads],
      handler: async ({ request, params }) => tempInboxMessageViewOf(await messageOf(request, params)),
    }),

    openOperation({
      open: 'tempInboxToken',
      method: 'GET',
      url: '/temp-mail/inboxes/:id/messages/:messageId/raw',
      operationId: 'downloadTempInboxMessage',
      summary: 'Download a message of a disposable inbox',
      description:
        "Needs the inbox's own access token as `Authorization: Bearer <token>`, no key. The message as it " +
        'arrived, after our `Return-Path` and `Received` lines.',
      params: messageParams,
      produces: 'message/rfc822',
      errors: [...reads],
      handler: async ({ request, params, reply }) => {
        const row = await messageOf(request, params);
        const bytes = await deps.sending.blobs.get(row.raw_sha256);
        if (bytes === null) throw notFound();
        reply.header('content-type', 'message/rfc822');
        reply.header('cache-control', 'no-store');
        return bytes;
      },
    }),
  ];
}

/**
 * Disposable inboxes (spec: "Other routes named"): made without a key, read with the inbox's own
 * token (docs/decisions/temp-mail.md). They belong to no workspace, so the resource's policies
 * (modes, narrowing) never apply: every operation is open (`OperationSpec.open`).
 */
export const tempMail: Resource = {
  tag: 'Disposable inboxes',
  description: 'Inboxes on the service’s disposable domain, made without a key and read with their own token.',
  modes: 'shared',
  narrowed: 'open',
  operations: tempMailOperations,
};
