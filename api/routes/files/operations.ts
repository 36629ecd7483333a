import { z } from 'zod';
import { mailboxParam } from '../../schemas.ts';
import { deleteFile, uploadFile } from '../../../commands/files/handlers.ts';
import { isDangerous, mediaTypeOf, UPLOAD_BYTES_MAX } from '../../../domain/files/rules.ts';
import { uploadName } from '../../uploads.ts';
import { workspaceOfPartition } from '../../../domain/shared/partitions.ts';
import { domainOf } from '../../../domain/shared/allowlists.ts';
import { listFiles } from '../../../projections/files/queries.ts';
import { findMailbox } from '../../../projections/addresses/queries.ts';
import { actorOf, isNarrowed } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf, reaches } from '../../narrowing.ts';
import { createdKey, cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { contentDisposition, fileOr404, fileView, viewFile } from './views.ts';

const idParams = z.object({ id: z.string() });

export const fileOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/files',
    operationId: 'listFiles',
    summary: 'List files',
    description:
      'Scope: `files:read`. Attachments of received mail and uploads, newest first, across every mailbox the credential ' +
      'reaches or one (`address`); `source` and `threadId` narrow it further.',
    scope: 'files:read',
    query: z.strictObject({
      address: mailboxParam.optional(),
      source: z.enum(['attachment', 'upload']).optional(),
      threadId: z.string().max(100).optional(),
      limit: limitParam(),
      cursor: cursorParam,
    }),
    response: pageSchema(fileView),
    handler: async ({ credential, query }) => {
      const filter = {
        address: query.address,
        source: query.source,
        threadId: query.threadId,
        reach: reachOf(credential),
      };
      return deps.cursors.list(credential.workspaceId, query, {
        name: 'files',
        rows: (after: [string, string] | null, limit) =>
          listFiles(deps.db, credential.workspaceId, filter, limit, after),
        key: createdKey,
        view: viewFile,
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/files/:id',
    operationId: 'getFile',
    errors: ['resource_not_found'],
    summary: 'Read a file',
    description: 'Scope: `files:read`. What describes the file; `GET /files/{id}/content` downloads it.',
    scope: 'files:read',
    params: idParams,
    response: fileView,
    handler: async ({ credential, params }) =>
      viewFile(await fileOr404(deps.db, credential.workspaceId, reachOf(credential), params.id)),
  }),

  operation({
    method: 'GET',
    url: '/files/:id/content',
    operationId: 'downloadFile',
    errors: ['resource_not_found'],
    summary: 'Download a file',
    description:
      'Scope: `files:read`. The bytes, with the content type the file was received or uploaded with, and always ' +
      '`Content-Disposition: attachment` (the name as an ASCII fallback and in full as `filename*`), `nosniff` and a ' +
      "sandboxing Content-Security-Policy: a file never runs in the service's origin.",
    scope: 'files:read',
    params: idParams,
    produces: 'application/octet-stream',
    handler: async ({ credential, params, reply }) => {
      const row = await fileOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      const bytes = await deps.sending.blobs.stream(row.sha256);
      if (!bytes) throw new ApiError('resource_not_found', 'No such file.', 'id');
      reply.header('content-type', row.content_type);
      reply.header('content-length', String(row.size));
      reply.header('content-disposition', contentDisposition(row.filename ?? row.id));
      reply.header('x-content-type-options', 'nosniff');
      reply.header('content-security-policy', "sandbox; default-src 'none'");
      return bytes;
    },
  }),

  operation({
    method: 'POST',
    url: '/files',
    operationId: 'uploadFile',
    errors: [
      'upload_no_name',
      'upload_empty',
      'upload_dangerous',
      'upload_no_address',
      'upload_forbidden',
      'upload_failed',
      'upload_storage_full',
    ],
    summary: 'Upload a file',
    description:
      'Scope: `files:write`. The body is the file itself, typed by `Content-Type` (kept as `type/subtype`; anything else is ' +
      '`application/octet-stream`), at most 10 MiB (413 `upload_too_large`): what one message may carry. The name comes in ' +
      '`X-Filename` (percent-encoded UTF-8 allowed) or the `filename` query parameter (400 `upload_no_name`); an empty body ' +
      'is 400 `upload_empty`; an executable or script (by extension or bytes) is 400 `upload_dangerous`. `address` files it ' +
      "under a mailbox the credential reaches (403 `upload_forbidden`); without it the file is the whole workspace's, which " +
      'a credential narrowed to some addresses or domains cannot make (403 `upload_no_address`). Attach it by `fileId` in ' +
      '`POST /emails` or a draft. 502 `upload_failed` (retry unchanged), 507 `upload_storage_full`.',
    scope: 'files:write',
    headers: { 'x-filename': 'The file name; percent-encoded UTF-8 for names outside ASCII.' },
    query: z.strictObject({
      filename: z.string().max(1000).optional().describe('The file name, when `X-Filename` is not sent.'),
      address: mailboxParam.optional(),
    }),
    rawBody: { maxBytes: UPLOAD_BYTES_MAX, tooLarge: 'upload_too_large' },
    status: 201,
    response: fileView,
    handler: async ({ credential, query, body, request }) => {
      const filename = uploadName(request.headers['x-filename'], query.filename);
      let owner: { address: string; domain: string } | null = null;
      if (query.address !== undefined) {
        const mailbox = reaches(credential, query.address)
          ? await findMailbox(deps.db, workspaceOfPartition(credential.workspaceId), query.address)
          : undefined;
        if (!mailbox)
          throw new ApiError(
            'upload_forbidden',
            'Not a mailbox of the workspace that this credential reaches.',
            'address',
            403,
          );
        owner = { address: mailbox.address, domain: domainOf(mailbox.address) };
      } else if (isNarrowed(credential)) {
        throw new ApiError('upload_no_address', 'Name the mailbox the file is for in `address`.', 'address', 403);
      }
      // `rawBody`: the route hands over the bytes (api/route.ts); no body schema types them.
      const bytes = body as unknown as Buffer;
      if (bytes.length === 0) throw new ApiError('upload_empty', 'The body holds no bytes.', null, 400);
      if (isDangerous(filename, bytes))
        throw new ApiError('upload_dangerous', 'Executables and scripts are not taken.', 'filename', 400);
      const actor = actorOf(credential, request.id);
      const file = await uploadFile(
        deps.commands,
        deps.sending.blobs,
        actor,
        { owner, filename, contentType: mediaTypeOf(request.headers['content-type']), bytes },
        new Date().toISOString(),
      );
      return viewFile(await fileOr404(deps.db, credential.workspaceId, null, file.fileId));
    },
  }),

  operation({
    method: 'DELETE',
    url: '/files/:id',
    operationId: 'deleteFile',
    errors: ['resource_not_found', 'file_in_use'],
    summary: 'Delete an uploaded file',
    description:
      'Scope: `files:write`. An upload no draft names; while one does, 409 `file_in_use`. An attachment of received mail ' +
      'goes with its thread (409 `file_in_use` here). Mail already sent with the file keeps it.',
    scope: 'files:write',
    params: idParams,
    response: z.object({ object: z.literal('file'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await fileOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      if (row.source === 'attachment')
        throw new ApiError(
          'file_in_use',
          'An attachment of received mail goes with its thread; delete the thread.',
          'id',
          409,
        );
      await deleteFile(deps.commands, actorOf(credential, request.id), row.id, new Date().toISOString());
      return { object: 'file' as const, id: row.id, deleted: true as const };
    },
  }),
];
