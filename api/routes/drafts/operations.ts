import { z } from 'zod';
import { mailboxParam } from '../../schemas.ts';
import {
  createDraft,
  deleteDraft,
  sendDraft,
  updateDraft,
  type DraftUploads,
} from '../../../commands/drafts/handlers.ts';
import type { DraftAttachment, DraftContent } from '../../../domain/drafts/events.ts';
import { checkDraft, type DraftInput } from '../../../domain/drafts/rules.ts';
import { ATTACHMENTS_MAX, BODY_MAX, SUBJECT_MAX } from '../../../domain/emails/rules.ts';
import { workspaceOfPartition } from '../../../domain/shared/partitions.ts';
import { listDrafts } from '../../../projections/drafts/queries.ts';
import { findFiles } from '../../../projections/files/queries.ts';
import { findMailbox } from '../../../projections/addresses/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf, reaches } from '../../narrowing.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { SEND_ERRORS } from '../emails/operations.ts';
import { emailView, viewAccepted } from '../emails/views.ts';
import { draftOr404, draftView, viewDraft } from './views.ts';

const idParams = z.object({ id: z.string() });
const addresses = z
  .union([z.string().max(998), z.array(z.string().max(998)).max(1000)])
  .describe('An address (`a@example.com` or `Name <a@example.com>`) or a list of them.');
const list = (v: string | string[] | undefined) => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);

const fields = {
  to: addresses,
  cc: addresses,
  bcc: addresses,
  replyTo: addresses,
  subject: z.string().max(SUBJECT_MAX).nullable(),
  text: z.string().nullable().describe(`At most ${BODY_MAX} characters.`),
  html: z.string().nullable().describe(`At most ${BODY_MAX} characters.`),
  signatureId: z.string().max(100).nullable().describe('Checked when the draft is sent, as a send checks it.'),
  attachments: z
    .array(z.strictObject({ fileId: z.string().max(100).describe('A file (`fil_`) the credential reaches.') }))
    .max(ATTACHMENTS_MAX)
    .describe(`At most ${ATTACHMENTS_MAX} files; upload content first (\`POST /files\`).`),
  inReplyTo: z.string().max(998).nullable().describe('The Message-ID answered.'),
  references: z.array(z.string().max(998)).max(100),
};
const fromField = z
  .string()
  .max(998)
  .describe('An address of the workspace the credential reaches (`a@example.com` or `Name <a@example.com>`).');

const draftFields = z.strictObject({ from: fromField, ...fields });
const createBody = draftFields.partial().required({ from: true });
const updateBody = draftFields.partial();
type DraftBody = z.infer<typeof updateBody>;

/**
 * The draft's content from the stored one (null for a create) and the body: what is sent replaces
 * (null clears), what is not keeps. `from` must be an address of the workspace the credential
 * reaches (403 `from_address_forbidden`, as a send answers); each attachment a file it reaches.
 */
async function contentOf(
  deps: ApiDeps,
  credential: Credential,
  stored: DraftContent | null,
  body: DraftBody,
): Promise<{ content: DraftContent; uploads: DraftUploads }> {
  const pick = <K extends keyof DraftBody & keyof DraftContent>(key: K, fallback: DraftContent[K]) =>
    (body[key] === undefined ? (stored?.[key] ?? fallback) : body[key]) as DraftContent[K];
  const listed = (key: 'to' | 'cc' | 'bcc' | 'replyTo') => list(body[key]) ?? stored?.[key] ?? [];
  const input: DraftInput = {
    from: body.from ?? stored?.from ?? '',
    to: listed('to'),
    cc: listed('cc'),
    bcc: listed('bcc'),
    replyTo: listed('replyTo'),
    subject: pick('subject', null),
    text: pick('text', null),
    html: pick('html', null),
    attachments: body.attachments ?? stored?.attachments ?? [],
    inReplyTo: pick('inReplyTo', null),
    references: body.references ?? stored?.references ?? [],
  };
  const checked = checkDraft(input);
  const mailbox =
    !checked.address.startsWith('*@') && reaches(credential, checked.address)
      ? await findMailbox(deps.db, workspaceOfPartition(credential.workspaceId), checked.address)
      : undefined;
  if (!mailbox)
    throw new ApiError(
      'from_address_forbidden',
      `This caller cannot write as ${checked.address}: it is not an address of the workspace it reaches.`,
      'from',
      403,
    );
  // One query for all the files, not one per attachment.
  const files = await findFiles(
    deps.db,
    credential.workspaceId,
    reachOf(credential),
    input.attachments.map((a) => a.fileId),
  );
  const uploads: DraftUploads = [];
  const attachments: DraftAttachment[] = [];
  for (const [i, { fileId }] of input.attachments.entries()) {
    const param = `attachments.${i}.fileId`;
    const file = files.get(fileId);
    if (!file) throw new ApiError('invalid_parameter', 'No file the caller reaches has this id.', param, 422);
    if (file.source === 'upload') uploads.push({ fileId, param });
    attachments.push({ fileId, filename: file.filename, contentType: file.content_type, size: file.size });
  }
  return {
    content: {
      ...input,
      address: checked.address,
      domain: checked.domain,
      signatureId: pick('signatureId', null),
      attachments,
      inReplyTo: checked.inReplyTo,
      references: checked.references,
    },
    uploads,
  };
}

const DRAFT_ERRORS = ['from_address_forbidden', 'invalid_email_address', 'too_many_recipients'] as const;

export const draftOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/drafts',
    operationId: 'createDraft',
    errors: [...DRAFT_ERRORS],
    summary: 'Save a draft',
    description:
      'Scope: `drafts:write`. Only `from` is required: an address of the workspace the credential reaches (403 ' +
      '`from_address_forbidden`). What is given must be what a send takes (addresses: 422 `invalid_email_address`; at ' +
      'most 50 recipients: 422 `too_many_recipients`; lengths); what is missing is refused only when the draft is sent. ' +
      'Attachments are files (`fileId`) the credential reaches: an upload a draft names cannot be deleted (409 `file_in_use`).',
    scope: 'drafts:write',
    body: createBody,
    bodyLimit: 4 * 1024 * 1024,
    status: 201,
    response: draftView,
    handler: async ({ credential, body, request }) => {
      const { content, uploads } = await contentOf(deps, credential, null, body);
      const actor = actorOf(credential, request.id);
      const id = await createDraft(deps.commands, actor, content, uploads, new Date().toISOString());
      return viewDraft(await draftOr404(deps.db, credential.workspaceId, null, id));
    },
  }),

  operation({
    method: 'GET',
    url: '/drafts',
    operationId: 'listDrafts',
    summary: 'List drafts',
    description:
      'Scope: `drafts:read`. Newest first (by creation: editing does not move a draft), across every mailbox the ' +
      'credential reaches or one (`address`).',
    scope: 'drafts:read',
    query: z.strictObject({
      address: mailboxParam.optional(),
      limit: limitParam(),
      cursor: cursorParam,
    }),
    response: pageSchema(draftView),
    handler: async ({ credential, query }) => {
      const filter = { address: query.address, reach: reachOf(credential) };
      return deps.cursors.list(credential.workspaceId, query, {
        name: 'drafts',
        rows: (after: [string, string] | null, limit) =>
          listDrafts(deps.db, credential.workspaceId, filter, limit, after),
        key: createdKey,
        view: viewDraft,
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/drafts/:id',
    operationId: 'getDraft',
    errors: ['resource_not_found'],
    summary: 'Read a draft',
    scope: 'drafts:read',
    params: idParams,
    response: draftView,
    handler: async ({ credential, params }) =>
      viewDraft(await draftOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
  }),

  operation({
    method: 'PATCH',
    url: '/drafts/:id',
    operationId: 'updateDraft',
    errors: ['resource_not_found', 'draft_sending', ...DRAFT_ERRORS],
    summary: 'Edit a draft',
    description:
      'Scope: `drafts:write`. Send only what changes: a field sent replaces (lists whole; null clears), one left out ' +
      'keeps. Checked as on create, the result whole.',
    scope: 'drafts:write',
    params: idParams,
    body: updateBody,
    bodyLimit: 4 * 1024 * 1024,
    response: draftView,
    handler: async ({ credential, params, body, request }) => {
      const reach = reachOf(credential);
      const row = await draftOr404(deps.db, credential.workspaceId, reach, params.id);
      const { content, uploads } = await contentOf(deps, credential, row.content as DraftContent, body);
      const actor = actorOf(credential, request.id);
      await updateDraft(deps.commands, actor, row.id, content, uploads, new Date().toISOString());
      return viewDraft(await draftOr404(deps.db, credential.workspaceId, null, row.id));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/drafts/:id',
    operationId: 'deleteDraft',
    errors: ['resource_not_found', 'draft_sending'],
    summary: 'Delete a draft',
    description: 'Scope: `drafts:write`. For good; the files it named stay (and may now be deleted).',
    scope: 'drafts:write',
    params: idParams,
    response: z.object({ object: z.literal('draft'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await draftOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await deleteDraft(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { object: 'draft' as const, id: row.id, deleted: true as const };
    },
  }),

  operation({
    method: 'POST',
    url: '/drafts/:id/send',
    operationId: 'sendDraft',
    errors: ['resource_not_found', ...SEND_ERRORS, 'invalid_parameter'],
    summary: 'Send a draft',
    description:
      'Scopes: `drafts:write` and `emails:send`. Hands the draft to the sending pipeline exactly as `POST /emails` would ' +
      'take its fields (every check and error of a send applies; a refused draft stays as it was), answers the accepted ' +
      'email, and the draft is gone (its id is 404 from then on). A draft always sends as the same email id, so a ' +
      'retried send never sends twice.',
    scope: 'drafts:write',
    params: idParams,
    status: 201,
    response: emailView,
    handler: async ({ credential, params, request }) => {
      if (!credential.scopes.includes('emails:send'))
        throw new ApiError('insufficient_scope', 'Sending a draft also needs the `emails:send` scope.', null);
      const row = await draftOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      const sender = {
        actor: actorOf(credential, request.id),
        mode: credential.mode,
        reach: reachOf(credential),
        viewOnly: credential.viewOnly ?? null,
        source: 'api' as const,
      };
      const sent = await sendDraft({ commands: deps.commands, sending: deps.sending }, sender, row.id, new Date());
      return viewAccepted(sent.email);
    },
  }),
];
