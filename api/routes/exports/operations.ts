import { z } from 'zod';
import { requestExport } from '../../../commands/exports/handlers.ts';
import { EXPORT_EVERY_MS } from '../../../domain/exports/events.ts';
import { exportPreviewCounts, exportStanding, listExports } from '../../../projections/exports/queries.ts';
import { actorOf, type Credential } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { limitParam } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import { contentDisposition } from '../files/views.ts';
import { EXPORT_SCOPES, exportOr404, exportPreviewView, exportView, viewExport } from './views.ts';

const idParams = z.object({ id: z.string() });

const WHO =
  'Only the owner, or a member whose role holds every permission, can export: through a key with no role or such a ' +
  'role, or an app they connected (else 403 `export_not_permitted`).';

function requirePermitted(credential: Credential): void {
  if (!credential.holdsEveryPermission)
    throw new ApiError('export_not_permitted', `This credential cannot export the workspace. ${WHO}`, null, 403);
}

/**
 * A single `bytes=` range of a file of `size` bytes, both ends included; null for the whole file
 * (no Range, several ranges, or an If-Range naming another version). Past the end is 416.
 */
export function byteRange(
  header: string | undefined,
  size: number,
  ifRange: { header: string | undefined; etag: string },
): { start: number; end: number } | null {
  if (header === undefined || (ifRange.header !== undefined && ifRange.header !== ifRange.etag)) return null;
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return null;
  const [first, last] = [match[1]!, match[2]!];
  const range =
    first === ''
      ? { start: Math.max(0, size - Number(last)), end: size - 1 }
      : { start: Number(first), end: last === '' ? size - 1 : Math.min(Number(last), size - 1) };
  if (range.start >= size || range.end < range.start || (first === '' && Number(last) === 0))
    throw new ApiError(
      'range_not_satisfiable',
      `The file has ${size} bytes; ask for a range within them.`,
      'Range',
      416,
      { 'Content-Range': `bytes */${size}` },
    );
  return range;
}

export const exportOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/exports/preview',
    operationId: 'previewExport',
    summary: 'Preview an export',
    description:
      'Scopes: the ten read scopes. Whether this credential may export (`allowed`, else `reason` `not-permitted`), ' +
      'when the next export can start (`nextAvailableAt`: a day after the last that did not fail), the export under ' +
      'way (`activeExportId`), and what an export would hold now (`counts`, null when not allowed).',
    scope: EXPORT_SCOPES,
    response: exportPreviewView,
    handler: async ({ credential }) => {
      const allowed = credential.holdsEveryPermission === true;
      const standing = await exportStanding(deps.db, credential.workspaceId);
      const now = Date.now();
      const next = standing.lastAt === null ? now : Math.max(now, standing.lastAt.getTime() + EXPORT_EVERY_MS);
      return {
        object: 'export_preview' as const,
        allowed,
        reason: allowed ? null : ('not-permitted' as const),
        nextAvailableAt: standing.activeId === null ? new Date(next).toISOString() : null,
        activeExportId: standing.activeId,
        counts: allowed ? await exportPreviewCounts(deps.db, credential.workspaceId) : null,
      };
    },
  }),

  operation({
    method: 'GET',
    url: '/exports',
    operationId: 'listExports',
    summary: 'List exports',
    description:
      'Scopes: the ten read scopes. Newest first, by offset: `limit` 1 to 100 (default 25), `offset` from 0; ' +
      'answers `data`, `total` and `hasMore`.',
    scope: EXPORT_SCOPES,
    query: z.strictObject({ limit: limitParam(), offset: z.coerce.number().int().min(0).default(0) }),
    response: z.object({
      object: z.literal('list'),
      data: z.array(exportView),
      total: z.number().int(),
      hasMore: z.boolean(),
    }),
    handler: async ({ credential, query }) => {
      const { rows, total } = await listExports(deps.db, credential.workspaceId, query);
      const now = new Date();
      return {
        object: 'list' as const,
        data: rows.map((r) => viewExport(r, now)),
        total,
        hasMore: query.offset + rows.length < total,
      };
    },
  }),

  operation({
    method: 'POST',
    url: '/exports',
    operationId: 'createExport',
    errors: ['export_not_permitted', 'already_running', 'export_limit_reached'],
    summary: 'Start an export',
    description:
      `Scopes: the ten read scopes. ${WHO} Queues an export of the whole workspace (201), made in the background: ` +
      'every conversation as mbox per address and label, contacts as vCard, audiences with their members, the calendar, ' +
      'templates with every version, rules, labels, addresses and a manifest with a SHA-256 per entry. One at a time ' +
      '(409 `already_running`), once a day (429 `export_limit_reached`, Retry-After until the next).',
    scope: EXPORT_SCOPES,
    stepUp: true,
    status: 201,
    response: exportView,
    handler: async ({ credential, request }) => {
      requirePermitted(credential);
      const createdBy = {
        kind: credential.kind,
        id: credential.kind === 'apiKey' ? credential.id : (credential.clientId ?? null),
      };
      const id = await requestExport(
        deps.commands,
        actorOf(credential, request.id),
        createdBy,
        new Date().toISOString(),
      );
      return viewExport(await exportOr404(deps.db, credential.workspaceId, id));
    },
  }),

  operation({
    method: 'GET',
    url: '/exports/:id',
    operationId: 'getExport',
    errors: ['resource_not_found'],
    summary: 'Read an export',
    description:
      'Scopes: the ten read scopes. Its status, phase and progress through the threads; size and file name once ready.',
    scope: EXPORT_SCOPES,
    params: idParams,
    response: exportView,
    handler: async ({ credential, params }) =>
      viewExport(await exportOr404(deps.db, credential.workspaceId, params.id)),
  }),

  operation({
    method: 'GET',
    url: '/exports/:id/content',
    operationId: 'downloadExport',
    errors: ['export_not_permitted', 'resource_not_found', 'export_not_ready', 'expired', 'range_not_satisfiable'],
    summary: 'Download an export',
    description:
      `Scopes: the ten read scopes. ${WHO} The zip (\`application/zip\`, its name in \`Content-Disposition\`). ` +
      'Before it is ready 409 `export_not_ready`; more than 365 days after, 409 `expired`. A single `Range: bytes=` ' +
      'answers 206 with those bytes (a download that resumes; `If-Range` with the `ETag` keeps it to this file); a ' +
      'range past the end is 416 `range_not_satisfiable`.',
    scope: EXPORT_SCOPES,
    stepUp: true,
    params: idParams,
    produces: 'application/zip',
    headers: { range: 'One `bytes=` range, to resume a download.', 'if-range': 'The `ETag` the first part came with.' },
    handler: async ({ credential, params, request, reply }) => {
      requirePermitted(credential);
      const row = await exportOr404(deps.db, credential.workspaceId, params.id);
      const view = viewExport(row);
      if (view.status === 'expired')
        throw new ApiError('expired', 'The export is older than 365 days; start a new one.', 'id', 409);
      if (view.status !== 'ready' || row.sha256 === null || row.size_bytes === null)
        throw new ApiError(
          'export_not_ready',
          `The export is ${view.status}; download it once it is ready.`,
          'id',
          409,
        );
      const size = Number(row.size_bytes);
      const etag = `"${row.sha256}"`;
      const ifRange = request.headers['if-range'];
      const range = byteRange(request.headers.range, size, {
        header: Array.isArray(ifRange) ? ifRange[0] : ifRange,
        etag,
      });
      const bytes = await deps.sending.blobs.stream(row.sha256, range ?? undefined);
      if (!bytes) throw new ApiError('expired', 'The export file is gone; start a new one.', 'id', 409);
      reply.header('content-type', 'application/zip');
      reply.header('content-disposition', contentDisposition(row.file_name ?? `${row.id}.zip`));
      reply.header('accept-ranges', 'bytes');
      reply.header('etag', etag);
      reply.header('x-content-type-options', 'nosniff');
      if (range) {
        reply.code(206);
        reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`);
        reply.header('content-length', String(range.end - range.start + 1));
      } else reply.header('content-length', String(size));
      return bytes;
    },
  }),
];
