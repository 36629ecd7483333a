import { z } from 'zod';
import { uploadName } from '../../uploads.ts';
import {
  cancelMailboxImport,
  createMailboxImport,
  importWholeFile,
  startMailboxImport,
  uploadImportChunk,
} from '../../../commands/mailbox-imports/handlers.ts';
import { IMPORT_FILE_BYTES_MAX, IMPORT_FILES_MAX } from '../../../domain/mailbox-imports/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import type { Mailbox } from '../../../domain/threads/events.ts';
import { findAddress } from '../../../projections/addresses/queries.ts';
import { findMailboxImport, listMailboxImports } from '../../../projections/mailbox-imports/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { reachOf } from '../../narrowing.ts';
import { createdKey, cursorParam, limitParam, listByLastId, pageSchema } from '../../paging.ts';
import { booleanParam } from '../../query.ts';
import { operation, type Operation } from '../../route.ts';
import { mailboxImportOr404, mailboxImportView, viewMailboxImport } from './views.ts';

const idParams = z.object({ id: z.string() });
const addressId = z.string().min(1).max(100).describe('The address (`addr_…`) the mail is imported into.');

const optionsBody = z
  .strictObject({
    keepInbox: z.boolean().default(true),
    includeSpam: z.boolean().default(false),
    includeTrash: z.boolean().default(false),
  })
  .default({ keepInbox: true, includeSpam: false, includeTrash: false });

/** The address as a mailbox, when it is one of the workspace the credential reaches; else 403. */
async function mailboxOf(deps: ApiDeps, credential: Credential, id: string): Promise<Mailbox> {
  const row = idPatterns.address.test(id)
    ? await findAddress(deps.db, credential.workspaceId, reachOf(credential), id)
    : undefined;
  if (!row)
    throw new ApiError(
      'address_not_allowed',
      'Not an address of the workspace that this credential reaches.',
      'addressId',
      403,
    );
  return { addressId: row.id, address: row.address, domainId: row.domain_id, domain: row.domain };
}

const view = async (deps: ApiDeps, credential: Credential, id: string) =>
  viewMailboxImport(await mailboxImportOr404(deps.db, credential.workspaceId, reachOf(credential), id));

export const mailboxImportOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/imports',
    operationId: 'createMailboxImport',
    errors: ['address_not_allowed', 'too_many_files', 'already_running'],
    summary: 'Create a mailbox import',
    description:
      'Scope: `threads:write`. Plans the upload of 1 to 50 files (`{name, bytes}`, each at most 100 GB; 51 is 400 ' +
      '`too_many_files`) into an address the credential reaches (else 403 `address_not_allowed`): answers the import, ' +
      "`uploading`, with `chunkBytes` and each file's `chunks`. Upload each part with `PUT /imports/{id}/files/{file}/chunks/{chunk}`, " +
      'then `POST /imports/{id}/start`. An address with an import queued or running is 409 `already_running`. Mbox ' +
      '(mboxo and mboxrd, and takeout mbox with `X-Gmail-Labels`), .eml, and .zip or .tgz archives of them (in folders, ' +
      'one archive deep; a takeout zip too) are read; the format comes from the bytes.',
    scope: 'threads:write',
    body: z.strictObject({
      addressId,
      files: z
        .array(
          z.strictObject({
            name: z.string().min(1).max(255),
            bytes: z.number().int().min(1).max(IMPORT_FILE_BYTES_MAX),
          }),
        )
        .min(1)
        .describe(`1 to ${IMPORT_FILES_MAX} files.`),
      options: optionsBody,
    }),
    status: 201,
    response: mailboxImportView,
    handler: async ({ credential, body, request }) => {
      const mailbox = await mailboxOf(deps, credential, body.addressId);
      const id = await createMailboxImport(
        deps.commands,
        deps.mailboxImports,
        actorOf(credential, request.id),
        { mailbox, files: body.files, options: body.options },
        new Date().toISOString(),
      );
      return view(deps, credential, id);
    },
  }),

  operation({
    method: 'PUT',
    url: '/imports/:id/files/:file/chunks/:chunk',
    operationId: 'uploadMailboxImportChunk',
    errors: ['resource_not_found', 'upload_empty', 'upload_storage_full', 'import_settled', 'already_running'],
    summary: 'Upload a part of an import file',
    description:
      'Scope: `threads:write`. The raw body is part `chunk` of file `file` (both from 0): exactly `chunkBytes` bytes, the ' +
      'last part what is left (else 422 `invalid_parameter` on `chunk`, nothing kept; more than `chunkBytes` is 413 ' +
      '`upload_too_large`). A part uploaded again replaces the first. Only while the import is `uploading`. ' +
      '507 `upload_storage_full` when the import store is full.',
    scope: 'threads:write',
    params: z.object({
      id: z.string(),
      file: z.coerce
        .number()
        .int()
        .min(0)
        .max(IMPORT_FILES_MAX - 1),
      chunk: z.coerce.number().int().min(0),
    }),
    rawBody: { maxBytes: deps.mailboxImports.chunkBytes, tooLarge: 'upload_too_large' },
    response: z.object({
      object: z.literal('mailbox_import_chunk'),
      importId: z.string(),
      file: z.number().int(),
      chunk: z.number().int(),
      bytes: z.number().int(),
    }),
    handler: async ({ credential, params, body, request }) => {
      const row = await mailboxImportOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      const bytes = body as unknown as Buffer;
      await uploadImportChunk(
        deps.commands,
        deps.mailboxImports,
        actorOf(credential, request.id),
        { importId: row.id, file: params.file, chunk: params.chunk },
        bytes,
      );
      return {
        object: 'mailbox_import_chunk' as const,
        importId: row.id,
        file: params.file,
        chunk: params.chunk,
        bytes: bytes.length,
      };
    },
  }),

  operation({
    method: 'POST',
    url: '/imports/:id/start',
    operationId: 'startMailboxImport',
    errors: [
      'resource_not_found',
      'missing_chunks',
      'unsupported_file',
      'upload_dangerous',
      'already_running',
      'import_settled',
    ],
    summary: 'Start an uploaded import',
    description:
      'Scope: `threads:write`. Every part must be there at its size (else 412 `missing_chunks`, the message naming each ' +
      'file and part); each file must read as an mbox, a message, a zip or a tgz (400 `unsupported_file`; an executable is 400 ' +
      "`upload_dangerous`). A zip's directory is checked whole: a name leaving the archive, a link, an executable, too " +
      "many entries or a ratio past the limits is 400 `upload_dangerous`; a tgz's first entry is checked, and what " +
      'its later entries show fails the import with `lastError`. The import is then `queued`, and `running` when the background work takes it. Starting a ' +
      'queued or running import again answers it as it is.',
    scope: 'threads:write',
    params: idParams,
    response: mailboxImportView,
    handler: async ({ credential, params, request }) => {
      const row = await mailboxImportOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await startMailboxImport(
        deps.commands,
        deps.mailboxImports,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      return view(deps, credential, row.id);
    },
  }),

  operation({
    method: 'POST',
    url: '/imports/:id/cancel',
    operationId: 'cancelMailboxImport',
    errors: ['resource_not_found'],
    summary: 'Cancel a mailbox import',
    description:
      'Scope: `threads:write`. An uploading, queued or running import is cancelled and its upload deleted; a running ' +
      'one stops within a few messages (what it filed stays). A completed, failed or cancelled import is answered as it is.',
    scope: 'threads:write',
    params: idParams,
    response: mailboxImportView,
    handler: async ({ credential, params, request }) => {
      const row = await mailboxImportOr404(deps.db, credential.workspaceId, reachOf(credential), params.id);
      await cancelMailboxImport(
        deps.commands,
        deps.mailboxImports,
        actorOf(credential, request.id),
        row.id,
        new Date().toISOString(),
      );
      return view(deps, credential, row.id);
    },
  }),

  operation({
    method: 'POST',
    url: '/imports/upload',
    operationId: 'uploadAndStartMailboxImport',
    errors: [
      'address_not_allowed',
      'already_running',
      'upload_no_name',
      'upload_empty',
      'upload_dangerous',
      'unsupported_file',
      'upload_storage_full',
    ],
    summary: 'Create, upload and start an import in one call',
    description:
      'Scope: `threads:write`. The raw body is one file (an mbox, a message, a zip or a tgz of them), at most 100 GB (413 `upload_too_large`), ' +
      'streamed to the import store as it arrives; its name in `X-Filename` (percent-encoded UTF-8 allowed) or ' +
      '`filename` (400 `upload_no_name`); empty is 400 `upload_empty`. Answers the import, `queued`. Nothing is ' +
      'recorded when the upload is refused or cut. No `Idempotency-Key`: the body is not held to compare.',
    scope: 'threads:write',
    headers: { 'x-filename': 'The file name; percent-encoded UTF-8 for names outside ASCII.' },
    query: z.strictObject({
      addressId,
      filename: z.string().max(1000).optional().describe('The file name, when `X-Filename` is not sent.'),
      keepInbox: booleanParam.optional(),
      includeSpam: booleanParam.optional(),
      includeTrash: booleanParam.optional(),
    }),
    rawBody: { maxBytes: IMPORT_FILE_BYTES_MAX, tooLarge: 'upload_too_large', stream: true },
    idempotency: false,
    status: 201,
    response: mailboxImportView,
    handler: async ({ credential, query, body, request }) => {
      const name = uploadName(request.headers['x-filename'], query.filename);
      const mailbox = await mailboxOf(deps, credential, query.addressId);
      const id = await importWholeFile(
        deps.commands,
        deps.mailboxImports,
        actorOf(credential, request.id),
        {
          mailbox,
          name,
          options: {
            keepInbox: query.keepInbox ?? true,
            includeSpam: query.includeSpam ?? false,
            includeTrash: query.includeTrash ?? false,
          },
        },
        body as unknown as AsyncIterable<Buffer>,
        new Date().toISOString(),
      );
      return view(deps, credential, id);
    },
  }),

  operation({
    method: 'GET',
    url: '/imports',
    operationId: 'listMailboxImports',
    summary: 'List mailbox imports',
    description:
      'Scope: `threads:read`. Newest first; `addressId` keeps those into one address. `cursor` is the id of the last ' +
      'import of the previous page (one naming no visible import is 400 `invalid_cursor`).',
    scope: 'threads:read',
    query: z.strictObject({ addressId: addressId.optional(), limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(mailboxImportView),
    handler: async ({ credential, query }) => {
      const reach = reachOf(credential);
      return listByLastId(query, {
        refused: 'a mailbox import this credential sees',
        after: async (id) => {
          if (!idPatterns.mailboxImport.test(id)) return null;
          const row = await findMailboxImport(deps.db, credential.workspaceId, reach, id);
          return row ? createdKey(row) : null;
        },
        rows: (after, limit) =>
          listMailboxImports(deps.db, credential.workspaceId, { reach, addressId: query.addressId }, limit, after),
        view: viewMailboxImport,
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/imports/:id',
    operationId: 'getMailboxImport',
    errors: ['resource_not_found'],
    summary: 'Get a mailbox import and its progress',
    scope: 'threads:read',
    params: idParams,
    response: mailboxImportView,
    handler: async ({ credential, params }) => view(deps, credential, params.id),
  }),
];
