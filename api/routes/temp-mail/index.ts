import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z, type ZodType } from 'zod';
import { hashSecret } from '../../../commands/api-keys/token.ts';
import { createTempInbox, TEMP_INBOX_TOKEN_PREFIX } from '../../../commands/temp-inboxes/handlers.ts';
import { networkOf } from '../../../domain/temp-inboxes/rules.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import type { MessageSummary } from '../../../domain/messages/summary.ts';
import {
  findTempInbox,
  findTempInboxMessage,
  listTempInboxMessages,
} from '../../../projections/temp-inboxes/queries.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { cursorParam, limitParam } from '../../paging.ts';
import { fromZod } from '../../plugins/errors.ts';

const PAGE = z.object({ limit: limitParam(100, 25), cursor: cursorParam }).strict();
const NO_BODY = z.object({}).strict();

function parse<T>(schema: ZodType<T>, input: unknown): T {
  const result = schema.safeParse(input ?? {});
  if (!result.success) throw fromZod(result.error.issues);
  return result.data;
}

const notFound = () => new ApiError('resource_not_found', 'No such disposable inbox, or not this token’s.', null, 404);

const messageView = (row: {
  id: string;
  inbox_id: string;
  mail_from: string;
  size: number;
  summary: MessageSummary;
  received_at: Date;
}) => ({
  object: 'temp_inbox_message' as const,
  id: row.id,
  inboxId: row.inbox_id,
  mailFrom: row.mail_from,
  from: row.summary.from,
  replyTo: row.summary.replyTo,
  to: row.summary.to,
  cc: row.summary.cc,
  subject: row.summary.subject,
  date: row.summary.date,
  messageId: row.summary.messageId,
  snippet: row.summary.snippet,
  headers: row.summary.headers,
  attachments: row.summary.attachments.map((a) => ({
    filename: a.filename,
    contentType: a.contentType,
    size: a.size,
    inline: a.inline,
  })),
  size: row.size,
  receivedAt: row.received_at.toISOString(),
});

/**
 * Disposable inboxes (spec: "Other routes named", POST /temp-mail/inboxes needs no key). Outside the
 * resources of api/route.ts, which all need a key or an OAuth token: creating needs nothing, and
 * reading needs the inbox's own access token as `Authorization: Bearer <token>`
 * (docs/decisions/temp-mail.md). Requests are counted by client address like every request
 * without a key (api/plugins/auth.ts), and creates by network besides.
 */
export function registerTempMailRoutes(app: FastifyInstance, deps: ApiDeps): void {
  const config = { auth: false };
  const { domain, lifetimeMs } = deps.tempMail;

  /** The inbox the request's token opens; a missing, foreign, wrong or expired one is one 404. */
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

  app.post('/temp-mail/inboxes', { config }, async (request, reply) => {
    parse(NO_BODY, request.body);
    if (domain === null)
      throw new ApiError(
        'temp_mail_not_configured',
        'This service has no disposable domain (`TEMP_MAIL_DOMAIN`).',
        null,
        409,
      );
    // Never null for a socket's address; the whole address is the fallback of something unforeseen.
    const network = networkOf(request.ip) ?? request.ip;
    const created = await createTempInbox(
      deps.commands,
      { network, domain, lifetimeMs, requestId: request.id },
      new Date().toISOString(),
    );
    reply.code(201).header('cache-control', 'no-store');
    return {
      object: 'temp_inbox',
      id: created.inboxId,
      address: created.address,
      token: created.token,
      createdAt: created.createdAt,
      expiresAt: created.expiresAt,
    };
  });

  app.get<{ Params: { id: string } }>('/temp-mail/inboxes/:id', { config }, async (request) => {
    const inbox = await inboxOf(request, request.params.id);
    return {
      object: 'temp_inbox',
      id: inbox.id,
      address: inbox.address,
      createdAt: inbox.created_at.toISOString(),
      expiresAt: inbox.expires_at.toISOString(),
    };
  });

  app.get<{ Params: { id: string } }>('/temp-mail/inboxes/:id/messages', { config }, async (request) => {
    const inbox = await inboxOf(request, request.params.id);
    const page = parse(PAGE, request.query);
    return deps.cursors.list(inbox.id, page, {
      name: 'temp-inbox-messages',
      rows: (after: [string, string] | null, limit) =>
        listTempInboxMessages(deps.db, inbox.id, limit, after && { receivedAt: after[0], id: after[1] }),
      key: (row) => [row.received_at.toISOString(), row.id] as [string, string],
      view: messageView,
    });
  });

  app.get<{ Params: { id: string; messageId: string } }>(
    '/temp-mail/inboxes/:id/messages/:messageId',
    { config },
    async (request) => {
      const inbox = await inboxOf(request, request.params.id);
      const row = await findTempInboxMessage(deps.db, inbox.id, request.params.messageId);
      if (!row) throw notFound();
      return messageView(row);
    },
  );

  app.get<{ Params: { id: string; messageId: string } }>(
    '/temp-mail/inboxes/:id/messages/:messageId/raw',
    { config },
    async (request, reply) => {
      const inbox = await inboxOf(request, request.params.id);
      const row = await findTempInboxMessage(deps.db, inbox.id, request.params.messageId);
      if (!row) throw notFound();
      const bytes = await deps.sending.blobs.get(row.raw_sha256);
      if (bytes === null) throw notFound();
      return reply.type('message/rfc822').header('cache-control', 'no-store').send(bytes);
    },
  );
}
