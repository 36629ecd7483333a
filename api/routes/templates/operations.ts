import { z } from 'zod';
import { createTemplate, deleteTemplate, editTemplate } from '../../../commands/templates/handlers.ts';
import { EMPTY_DOCUMENT, mergeContent, type ContentPatch } from '../../../domain/templates/decide.ts';
import {
  documentSchema,
  htmlSchema,
  propsSchema,
  slotsSchema,
  subjectSchema,
} from '../../../domain/templates/document.ts';
import { ENGINES, type TemplateContent } from '../../../domain/templates/events.ts';
import { findStarter, STARTERS } from '../../../domain/templates/starters.ts';
import { SLUG_MAX, SLUG_PATTERN } from '../../../domain/template-names/decide.ts';
import { listTemplates, TEMPLATE_SORTS, templateCursorOf } from '../../../projections/templates/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ApiError } from '../../errors/api-error.ts';
import { ifMatchHeader } from '../../etags.ts';
import { limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import {
  answerTemplate,
  idParams,
  templateIfMatch,
  templateName,
  templateOr404,
  templateView,
  viewTemplate,
} from './views.ts';

/** Problems inside the template's content answer `invalid_template`, with the path down to the block. */
const issueCodes = {
  document: 'invalid_template',
  html: 'invalid_template',
  subject: 'invalid_template',
  slots: 'invalid_template',
  props: 'invalid_template',
} as const;
/** An html body may hold 1,000,000 characters of up to 4 bytes each, next to the rest of the body. */
const bodyLimit = 6 * 1024 * 1024;

const contentFields = {
  engine: z.enum(ENGINES).optional().describe('Inferred from `html` (html) or `document` (blocks) when omitted.'),
  subject: subjectSchema.optional(),
  document: documentSchema.optional(),
  html: htmlSchema.optional().describe('Stored as submitted; sanitised when published.'),
  slots: slotsSchema.optional().describe('Placeholders of the subject and preview; wins over `document.slots`.'),
  props: propsSchema.optional().describe('Values the body takes; wins over `document.props`.'),
};
const description = z.string().max(500).nullable().optional();

/** Lifts `document.slots`/`document.props` to the version; top-level lists win. */
function patchOf(body: Partial<Record<keyof typeof contentFields, unknown>>): ContentPatch {
  const doc = body.document as (Record<string, unknown> & { slots?: unknown; props?: unknown }) | undefined;
  let document: Record<string, unknown> | undefined;
  if (doc) {
    const { slots: _s, props: _p, ...rest } = doc;
    document = rest;
  }
  const patch: ContentPatch = {};
  if (body.engine !== undefined) patch.engine = body.engine as ContentPatch['engine'];
  if (body.subject !== undefined) patch.subject = body.subject as string;
  if (document !== undefined) patch.document = document;
  if (body.html !== undefined) patch.html = body.html as string;
  const s = (body.slots ?? doc?.slots) as ContentPatch['slots'];
  const p = (body.props ?? doc?.props) as ContentPatch['props'];
  if (s !== undefined) patch.slots = s;
  if (p !== undefined) patch.props = p;
  return patch;
}

const BLANK: TemplateContent = {
  engine: 'blocks',
  subject: '',
  document: EMPTY_DOCUMENT,
  html: null,
  slots: [],
  props: [],
};

export const templateOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/templates',
    operationId: 'listTemplates',
    summary: 'List templates',
    description:
      'Scope: `templates:read`. Keyset pages under the chosen sort; a cursor is valid only under the sort that produced it. ' +
      '`search`: every word must appear in the id, name, slug, description or published subject (`%` and `_` literal); when no ' +
      'template matches that way, close spellings match (trigram word similarity).',
    scope: 'templates:read',
    query: z.strictObject({
      limit: limitParam(),
      cursor: z.string().min(1).max(2048).optional(),
      status: z.enum(['draft', 'active', 'archived']).optional(),
      search: z.string().max(200).optional(),
      sort: z.enum(TEMPLATE_SORTS).default('updated-newest'),
    }),
    response: pageSchema(templateView),
    handler: async ({ credential, query }) =>
      deps.cursors.list(credential.workspaceId, query, {
        name: `templates:${query.sort}`,
        rows: (after: [string, string] | null, limit) =>
          listTemplates(
            deps.db,
            credential.workspaceId,
            { status: query.status, search: query.search },
            query.sort,
            limit,
            after,
          ),
        key: (r) => templateCursorOf(query.sort, r),
        view: (r) => viewTemplate(r),
      }),
  }),

  operation({
    method: 'GET',
    url: '/templates/starters',
    operationId: 'listTemplateStarters',
    summary: 'Built-in starters',
    description: 'Scope: `templates:read`. Pass a starter `slug` as `starter` when creating a template.',
    scope: 'templates:read',
    response: pageSchema(
      z
        .object({ object: z.literal('template_starter'), slug: z.string(), name: z.string(), description: z.string() })
        .passthrough(),
    ),
    handler: async () => ({
      object: 'list' as const,
      data: STARTERS.map((s) => ({ object: 'template_starter' as const, ...s })),
      hasMore: false,
      nextCursor: null,
    }),
  }),

  operation({
    method: 'POST',
    url: '/templates',
    operationId: 'createTemplate',
    errors: ['resource_not_found', 'template_name_taken', 'template_slug_taken', 'workspace_limit_reached'],
    summary: 'Create a template',
    description:
      'Scope: `templates:write`. Version 1 is a draft, or published with `publish: true`. The slug is derived from the name when ' +
      'omitted and never changes on rename. At most 200 templates per workspace, archived ones included.',
    scope: 'templates:write',
    bodyLimit,
    issueCodes,
    body: z.strictObject({
      name: templateName,
      slug: z.string().max(SLUG_MAX).regex(SLUG_PATTERN).optional(),
      description,
      publish: z.boolean().default(false),
      starter: z.string().max(64).optional().describe('A starter slug (GET /templates/starters); your own fields win.'),
      ...contentFields,
    }),
    status: 201,
    response: templateView,
    handler: async ({ credential, body, request, reply }) => {
      const starter = body.starter === undefined ? null : findStarter(body.starter);
      if (starter === undefined)
        throw new ApiError('resource_not_found', 'No such starter (see GET /templates/starters).', 'starter', 404);
      const base: TemplateContent = starter ?? BLANK;
      const templateId = await createTemplate(
        deps.commands,
        actorOf(credential, request.id),
        {
          name: body.name,
          slug: body.slug ?? null,
          description: body.description !== undefined ? body.description : (starter?.description ?? null),
          starter: starter?.slug ?? null,
          content: mergeContent(base, patchOf(body)),
          publish: body.publish,
        },
        new Date().toISOString(),
      );
      return answerTemplate(deps.db, reply, credential.workspaceId, templateId);
    },
  }),

  operation({
    method: 'GET',
    url: '/templates/:id',
    operationId: 'getTemplate',
    errors: ['resource_not_found'],
    summary: 'Read a template',
    description:
      'Scope: `templates:read`. By `tpl_` id or slug, with `latest` (the head version). The `ETag` header feeds `If-Match`.',
    scope: 'templates:read',
    params: idParams,
    response: templateView,
    handler: async ({ credential, params, reply }) => answerTemplate(deps.db, reply, credential.workspaceId, params.id),
  }),

  operation({
    method: 'PATCH',
    url: '/templates/:id',
    operationId: 'updateTemplate',
    errors: ['resource_not_found', 'template_name_taken', 'version_conflict'],
    summary: 'Update a template',
    description:
      'Scope: `templates:write`. Omitted fields stay; `document`, `slots` and `props` replace wholesale. Editing a published head ' +
      'mints a new draft version (sends keep the published one); `publish: true` publishes the result.',
    scope: 'templates:write',
    bodyLimit,
    issueCodes,
    headers: ifMatchHeader('template'),
    params: idParams,
    body: z.strictObject({
      name: templateName.optional(),
      description,
      publish: z.boolean().default(false),
      ...contentFields,
    }),
    response: templateView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      const patch = patchOf(body);
      await editTemplate(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        {
          ifMatch: templateIfMatch(request.headers),
          name: body.name,
          description: body.description,
          content: Object.keys(patch).length > 0 ? patch : null,
          publish: body.publish,
        },
        new Date().toISOString(),
      );
      return answerTemplate(deps.db, reply, credential.workspaceId, row.id);
    },
  }),

  operation({
    method: 'DELETE',
    url: '/templates/:id',
    operationId: 'deleteTemplate',
    errors: ['resource_not_found', 'version_conflict', 'template_in_use'],
    summary: 'Delete a template',
    description:
      'Scope: `templates:write`. Frees its place, name and slug; every version goes with it. Refused with 409 ' +
      '`template_in_use` while a broadcast not yet started uses it.',
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: idParams,
    response: z.object({ object: z.literal('template'), id: z.string(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      await deleteTemplate(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: templateIfMatch(request.headers) },
        new Date().toISOString(),
      );
      return { object: 'template' as const, id: row.id, deleted: true as const };
    },
  }),
];
