import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { cancelEmail, sendEmail, type Sender, type SendSource } from '../../../commands/emails/handlers.ts';
import { ATTACHMENTS_MAX, BATCH_MAX, HEADERS_MAX, SUBJECT_MAX, TAGS_MAX } from '../../../domain/emails/rules.ts';
import { TRANSLATED_BATCH_MAX, TRANSLATION_MAX } from '../../../domain/emails/translation.ts';
import { DomainError } from '../../../domain/shared/errors.ts';
import { historyOf, listEmails, recipientsOf } from '../../../projections/emails/queries.ts';
import { EMAIL_STATUSES } from '../../../projections/emails/tables.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { CATALOGUE, isErrorCode, TYPE_BY_STATUS } from '../../errors/catalogue.ts';
import { reachOf } from '../../narrowing.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { fromZod } from '../../plugins/errors.ts';
import { operation, type Operation } from '../../route.ts';
import { emailOr404, emailView, emailWithHistoryView, viewAccepted, viewEmail, viewHistory } from './views.ts';

const addresses = z
  .union([z.string().max(998), z.array(z.string().max(998)).max(1000)])
  .describe('An address (`a@example.com` or `Name <a@example.com>`) or a list of them.');

/** One message: the body of `POST /emails`, and each item of `POST /emails/batch`. */
export const sendBody = z.strictObject({
  from: z
    .string()
    .max(998)
    .describe(
      'An enabled address of the workspace the credential reaches, as `a@example.com` or `Name <a@example.com>`.',
    ),
  to: addresses.optional(),
  cc: addresses.optional(),
  bcc: addresses.optional(),
  replyTo: addresses.optional(),
  subject: z
    .string()
    .max(SUBJECT_MAX)
    .optional()
    .describe('Required without `template`; with one, replaces its subject.'),
  text: z
    .string()
    .optional()
    .describe('At most 1,000,000 characters; `text`, `html` or both unless `template` is sent.'),
  html: z.string().optional().describe('At most 1,000,000 characters.'),
  template: z
    .strictObject({
      id: z.string().min(1).max(100).describe('A `tpl_` id or a slug.'),
      props: z.record(z.string(), z.unknown()).optional(),
    })
    .optional()
    .describe("The template's published version, rendered with `props`; not with `text` or `html`."),
  signatureId: z
    .string()
    .max(100)
    .optional()
    .describe(
      "A signature of the sending address or its domain's catch-all; without it, the address's default (the reply default with `inReplyTo`).",
    ),
  attachments: z
    .array(
      z.strictObject({
        filename: z
          .string()
          .max(255)
          .optional()
          .describe("Required with `content`; with `fileId`, replaces the file's name."),
        content: z.string().optional().describe('Base64; or `fileId`.'),
        fileId: z
          .string()
          .max(100)
          .optional()
          .describe(
            'A stored file (`fil_`: an upload, or an attachment of received mail) the credential reaches, instead of `content`.',
          ),
        contentType: z
          .string()
          .max(255)
          .regex(/^[\w.+-]+\/[\w.+-]+$/)
          .optional()
          .describe('Default `application/octet-stream`.'),
        contentId: z
          .string()
          .max(255)
          .regex(/^[\w.@+-]+$/)
          .optional()
          .describe('An inline part the html shows as `cid:<contentId>`.'),
      }),
    )
    .max(ATTACHMENTS_MAX)
    .optional()
    .describe('At most 20, and 10 MiB decoded in all, stored files included.'),
  headers: z
    .record(z.string(), z.string())
    .optional()
    .describe(
      `At most ${HEADERS_MAX}; reserved ones (From, To, Subject, Message-ID, DKIM-Signature, Content-*, …) are 422 \`reserved_header\`.`,
    ),
  tags: z
    .array(z.strictObject({ name: z.string(), value: z.string() }))
    .max(TAGS_MAX)
    .optional()
    .describe('Name and value: 1 to 256 of letters, digits, `_` and `-`.'),
  scheduledAt: z
    .string()
    .max(64)
    .optional()
    .describe('ISO 8601 with a zone, at most 30 days ahead; a time already past sends at once.'),
  inReplyTo: z.string().max(998).optional().describe('The Message-ID answered; the message threads with it.'),
  references: z.array(z.string().max(998)).max(100).optional(),
  translate: z
    .strictObject({
      to: z
        .string()
        .max(35)
        .describe('A BCP 47 language tag (`de`, `pt-BR`, `zh-Hant`); an unknown one is 422 `unknown_language`.'),
    })
    .optional()
    .describe(
      `Translates subject, text and html (a template's rendering included; the signature stays as written) at acceptance, ` +
        `through the AI model: at most ${TRANSLATION_MAX} characters together (422 \`translation_too_long\`), one AI action of ` +
        'the day (429 `ai_quota_exceeded`); a model that fails is 503 `translation_failed`. Without a model configured, 409 ' +
        '`translation_not_configured`.',
    ),
});
type SendBody = z.infer<typeof sendBody>;

/** What any send is refused with, whichever route takes it (`POST /emails`, a template's send, a draft's). */
export const SEND_ERRORS = [
  'from_address_forbidden',
  'address_disabled',
  'invalid_email_address',
  'too_many_recipients',
  'send_quota_exceeded',
  'stream_paused',
] as const;

/** What a send body (`sendBody`) adds to them: its headers, its template and its translation. */
export const SEND_BODY_ERRORS = [
  ...SEND_ERRORS,
  'reserved_header',
  'template_not_found',
  'template_archived',
  'template_not_published',
  'unknown_template_prop',
  'translation_not_configured',
  'unknown_language',
  'translation_too_long',
  'translation_failed',
  'ai_quota_exceeded',
] as const;

const batchItem = z.object({
  index: z.number().int(),
  email: emailView.nullable(),
  error: z
    .object({ type: z.string(), code: z.string(), message: z.string(), param: z.string().nullable() })
    .nullable()
    .describe('Why this message was refused, as an error envelope would say; null when it was accepted.'),
});

const senderOf = (credential: Credential, request: FastifyRequest, source: SendSource): Sender => ({
  actor: actorOf(credential, request.id),
  mode: credential.mode,
  reach: reachOf(credential),
  viewOnly: credential.viewOnly ?? null,
  source,
});

/** `tag` as the list takes it: `name` or `name:value`. */
const tagQuery = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,256}(:[A-Za-z0-9_-]{1,256})?$/)
  .transform((t) => {
    const [name, value] = t.split(':');
    return value === undefined ? { name: name! } : { name: name!, value };
  });

export const emailOperations = (deps: ApiDeps): Operation[] => {
  const ctx = { commands: deps.commands, sending: deps.sending };
  const send = (credential: Credential, request: FastifyRequest, source: SendSource, body: SendBody) =>
    sendEmail(ctx, senderOf(credential, request, source), body, new Date());

  return [
    operation({
      method: 'POST',
      url: '/emails',
      operationId: 'sendEmail',
      errors: [...SEND_BODY_ERRORS, 'invalid_parameter'],
      summary: 'Send an email',
      description:
        'Scope: `emails:send`. Accepts the message and answers at once; delivery follows (`GET /emails/{id}` shows it). Suppressed ' +
        'recipients are dropped with their reason; a message whose recipients are all suppressed is accepted with status `failed`. ' +
        'At most 50 recipients (to, cc, bcc together; 422 `too_many_recipients`). Each live message counts against the monthly send ' +
        "allowance of the workspace (429 `send_quota_exceeded`, Retry-After to 00:00 UTC on the first of next month); test keys' " +
        'mail is recorded and never leaves. The same Idempotency-Key with the same body answers the stored answer.',
      scope: 'emails:send',
      body: sendBody,
      bodyLimit: 16 * 1024 * 1024,
      status: 201,
      response: emailView,
      handler: async ({ credential, body, request }) =>
        viewAccepted((await send(credential, request, 'api', body)).email),
    }),

    operation({
      method: 'POST',
      url: '/emails/batch',
      operationId: 'sendEmails',
      errors: ['too_many_items'],
      summary: 'Send up to 100 emails',
      description:
        'Scope: `emails:send`. 1 to 100 messages, each the body of `POST /emails` (otherwise 422 `too_many_items`). Each is checked ' +
        'and accepted on its own: `data` answers them in order, each with its `email` or its `error` (the codes of `POST /emails`, ' +
        `\`param\` within the message). A batch in which any message asks for \`translate\` holds at most ${TRANSLATED_BATCH_MAX} ` +
        'messages (each is a call of the AI model). The whole body is at most 40 MiB.',
      scope: 'emails:send',
      body: z.strictObject({
        emails: z
          .array(z.record(z.string(), z.unknown()).describe('A message: the body of `POST /emails`.'))
          .describe(`1 to 100 messages; 1 to ${TRANSLATED_BATCH_MAX} when any asks for \`translate\`.`),
      }),
      bodyLimit: 40 * 1024 * 1024,
      response: z.object({ object: z.literal('email_batch'), data: z.array(batchItem) }),
      handler: async ({ credential, body, request }) => {
        if (body.emails.length === 0 || body.emails.length > BATCH_MAX)
          throw new ApiError('too_many_items', `A batch holds 1 to ${BATCH_MAX} messages.`, 'emails');
        if (body.emails.length > TRANSLATED_BATCH_MAX && body.emails.some((e) => e.translate !== undefined))
          throw new ApiError(
            'too_many_items',
            `A batch with \`translate\` holds at most ${TRANSLATED_BATCH_MAX} messages.`,
            'emails',
          );
        const data = await Promise.all(
          body.emails.map(async (item, index) => {
            try {
              const parsed = sendBody.safeParse(item);
              if (!parsed.success) throw fromZod(parsed.error.issues);
              const { email } = await send(credential, request, 'batch', parsed.data);
              return { index, email: viewAccepted(email), error: null };
            } catch (error) {
              return { index, email: null, error: itemError(error) };
            }
          }),
        );
        return { object: 'email_batch' as const, data };
      },
    }),

    operation({
      method: 'GET',
      url: '/emails',
      operationId: 'listEmails',
      summary: 'List sent emails',
      description: "Scope: `emails:read`. Newest first, with each message's recipients and their standing.",
      scope: 'emails:read',
      query: z.strictObject({
        status: z.enum(EMAIL_STATUSES).optional(),
        from: z
          .string()
          .max(320)
          .transform((s) => s.trim().toLowerCase())
          .optional()
          .describe('The sending address.'),
        tag: tagQuery.optional().describe('`name` or `name:value`: messages carrying that tag.'),
        limit: limitParam(),
        cursor: cursorParam,
      }),
      response: pageSchema(emailView),
      handler: async ({ credential, query }) => {
        const filter = { status: query.status, from: query.from, tag: query.tag, reach: reachOf(credential) };
        return deps.cursors.list(credential.workspaceId, query, {
          name: 'emails',
          rows: async (after: [string, string] | null, limit) => {
            const rows = await listEmails(deps.db, credential.workspaceId, filter, limit, after);
            const recipients = await recipientsOf(
              deps.db,
              rows.map((r) => r.id),
            );
            return rows.map((row) => ({ row, recipients: recipients.filter((r) => r.email_id === row.id) }));
          },
          key: ({ row }) => createdKey(row),
          view: ({ row, recipients }) => viewEmail(row, recipients),
        });
      },
    }),

    operation({
      method: 'GET',
      url: '/emails/:id',
      operationId: 'getEmail',
      errors: ['resource_not_found'],
      summary: 'Read an email',
      description:
        "Scope: `emails:read`. The message, each recipient's standing, and its history: every delivery attempt with the SMTP reply.",
      scope: 'emails:read',
      params: z.object({ id: z.string() }),
      response: emailWithHistoryView,
      handler: async ({ credential, params }) => {
        const row = await emailOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
        const [recipients, history] = await Promise.all([recipientsOf(deps.db, [row.id]), historyOf(deps.db, row.id)]);
        return { ...viewEmail(row, recipients), history: viewHistory(history) };
      },
    }),

    operation({
      method: 'POST',
      url: '/emails/:id/cancel',
      operationId: 'cancelEmail',
      errors: ['resource_not_found', 'email_not_cancellable'],
      summary: 'Cancel a scheduled email',
      description:
        'Scope: `emails:send`. Only before its `scheduledAt` and before delivery has started (409 `email_not_cancellable`). ' +
        'Cancelling a cancelled email answers it again.',
      scope: 'emails:send',
      params: z.object({ id: z.string() }),
      response: emailView,
      handler: async ({ credential, params, request }) => {
        const reach = reachOf(credential);
        const row = await emailOr404(deps.db, credential.workspaceId, reach, params.id);
        await cancelEmail(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
        const after = await emailOr404(deps.db, credential.workspaceId, reach, row.id);
        return viewEmail(after, await recipientsOf(deps.db, [row.id]));
      },
    }),
  ];
};

/** A batch item's refusal, as the error envelope of `POST /emails` would carry it. */
function itemError(error: unknown) {
  if (error instanceof ApiError)
    return { type: error.type, code: error.code, message: error.message, param: error.param };
  if (error instanceof DomainError) {
    const status = isErrorCode(error.code) ? CATALOGUE[error.code][0] : 422;
    return {
      type: TYPE_BY_STATUS[status] ?? 'api_error',
      code: error.code,
      message: error.message,
      param: error.param,
    };
  }
  throw error;
}
