import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { renderVersion } from '../../commands/templates/render.ts';
import {
  archiveTemplate,
  createTemplate,
  deleteTemplate,
  deleteTemplateVersion,
  duplicateTemplate,
  editTemplate,
  publishTemplate,
  restoreTemplateVersion,
  unarchiveTemplate,
} from '../../commands/templates/handlers.ts';
import { EMPTY_DOCUMENT, mergeContent, sendableVersion, type ContentPatch } from '../../domain/templates/decide.ts';
import { documentSchema, htmlSchema, propsSchema, slotsSchema, subjectSchema } from '../../domain/templates/document.ts';
import { ENGINES, type TemplateContent } from '../../domain/templates/events.ts';
import { findStarter, STARTERS } from '../../domain/templates/starters.ts';
import { SLUG_MAX, SLUG_PATTERN } from '../../domain/template-registry/decide.ts';
import {
  findTemplate,
  findTemplateVersion,
  listTemplates,
  listTemplateVersions,
  TEMPLATE_SORTS,
  templateCursorOf,
  type TemplateRow,
} from '../../projections/templates/queries.ts';
import { actorOf } from '../credential.ts';
import { ApiError } from '../errors/api-error.ts';
import { lookup } from '../lookups.ts';
import { cursorParam, limitParam, pageSchema } from '../paging.ts';
import type { AnswerHead } from '../idempotency.ts';
import { route } from '../route.ts';
import type { ApiDeps } from '../deps.ts';
import { ifMatchHeader } from '../etags.ts';
import { etagOf, templateIfMatch, templateView, versionView, viewTemplate, viewVersion } from './template-views.ts';

const tags = ['Templates'];

/** Problems inside the template's content answer `invalid_template`, with the path down to the block. */
const issueCodes = { document: 'invalid_template', html: 'invalid_template', subject: 'invalid_template', slots: 'invalid_template', props: 'invalid_template' };
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
const name = z.string().trim().min(1).max(100);
const description = z.string().max(500).nullable().optional();

const idParams = z.object({ id: z.string().describe('A `tpl_` id or a slug.') });
const versionParams = z.object({ id: z.string(), version: z.coerce.number().int().positive().max(2_147_483_647) });
const deleted = (object: string) => z.object({ object: z.literal(object), id: z.string(), deleted: z.literal(true) });

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

const templateOr404 = lookup(findTemplate, { code: 'resource_not_found', message: 'No such template.', param: 'id' });
const templateVersionOr422 = lookup(findTemplateVersion, { code: 'template_version_not_found', message: 'The template has no such version.', param: 'version' });

const BLANK: TemplateContent = { engine: 'blocks', subject: '', document: EMPTY_DOCUMENT, html: null, slots: [], props: [] };

export function registerTemplates(app: FastifyInstance, deps: ApiDeps): void {
  const rowOf = (workspaceId: string, idOrSlug: string) => templateOr404(deps.db, workspaceId, idOrSlug);
  /** The template as it now stands, with `latest` and its ETag. */
  const answer = async (reply: AnswerHead, workspaceId: string, templateId: string) => {
    const row = await rowOf(workspaceId, templateId);
    const latest = await findTemplateVersion(deps.db, row.id, row.latest_version);
    reply.header('etag', etagOf(row));
    return viewTemplate(row, latest);
  };

  route(app, {
    method: 'GET',
    url: '/templates',
    summary: 'List templates',
    description:
      'Scope: `templates:read`. Keyset pages under the chosen sort; a cursor is valid only under the sort that produced it. ' +
      '`search`: every word must appear in the id, name, slug, description or published subject (`%` and `_` literal); when no ' +
      'template matches that way, close spellings match (trigram word similarity).',
    tags,
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
        rows: (after: [string, string] | null, limit) => listTemplates(deps.db, credential.workspaceId, { status: query.status, search: query.search }, query.sort, limit, after),
        key: (r) => templateCursorOf(query.sort, r),
        view: (r) => viewTemplate(r),
      }),
  });

  route(app, {
    method: 'GET',
    url: '/templates/starters',
    summary: 'Built-in starters',
    description: 'Scope: `templates:read`. Pass a starter `slug` as `starter` when creating a template.',
    tags,
    scope: 'templates:read',
    response: pageSchema(z.object({ object: z.literal('template_starter'), slug: z.string(), name: z.string(), description: z.string() }).passthrough()),
    handler: async () => ({ object: 'list' as const, data: STARTERS.map((s) => ({ object: 'template_starter' as const, ...s })), hasMore: false, nextCursor: null }),
  });

  route(app, {
    method: 'POST',
    url: '/templates',
    summary: 'Create a template',
    description:
      'Scope: `templates:write`. Version 1 is a draft, or published with `publish: true`. The slug is derived from the name when ' +
      'omitted and never changes on rename. At most 200 templates per workspace, archived ones included.',
    tags,
    scope: 'templates:write',
    bodyLimit,
    issueCodes,
    body: z.strictObject({
      name,
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
      if (starter === undefined) throw new ApiError('resource_not_found', 'No such starter (see GET /templates/starters).', 'starter', 404);
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
      return answer(reply, credential.workspaceId, templateId);
    },
  });

  route(app, {
    method: 'GET',
    url: '/templates/:id',
    summary: 'Read a template',
    description: 'Scope: `templates:read`. By `tpl_` id or slug, with `latest` (the head version). The `ETag` header feeds `If-Match`.',
    tags,
    scope: 'templates:read',
    params: idParams,
    response: templateView,
    handler: async ({ credential, params, reply }) => answer(reply, credential.workspaceId, params.id),
  });

  route(app, {
    method: 'PATCH',
    url: '/templates/:id',
    summary: 'Update a template',
    description:
      'Scope: `templates:write`. Omitted fields stay; `document`, `slots` and `props` replace wholesale. Editing a published head ' +
      'mints a new draft version (sends keep the published one); `publish: true` publishes the result.',
    tags,
    scope: 'templates:write',
    bodyLimit,
    issueCodes,
    headers: ifMatchHeader('template'),
    params: idParams,
    body: z.strictObject({ name: name.optional(), description, publish: z.boolean().default(false), ...contentFields }),
    response: templateView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      const patch = patchOf(body);
      await editTemplate(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: templateIfMatch(request.headers), name: body.name, description: body.description, content: Object.keys(patch).length > 0 ? patch : null, publish: body.publish },
        new Date().toISOString(),
      );
      return answer(reply, credential.workspaceId, row.id);
    },
  });

  route(app, {
    method: 'DELETE',
    url: '/templates/:id',
    summary: 'Delete a template',
    description: 'Scope: `templates:write`. Frees its place, name and slug; every version goes with it.',
    tags,
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: idParams,
    response: deleted('template'),
    handler: async ({ credential, params, request }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      await deleteTemplate(deps.commands, actorOf(credential, request.id), row.id, { ifMatch: templateIfMatch(request.headers) }, new Date().toISOString());
      return { object: 'template' as const, id: row.id, deleted: true as const };
    },
  });

  route(app, {
    method: 'POST',
    url: '/templates/:id/duplicate',
    summary: 'Duplicate a template',
    description: 'Scope: `templates:write`. A new draft template with the head content; name defaults to `<name> (copy)`.',
    tags,
    scope: 'templates:write',
    params: idParams,
    body: z.strictObject({ name: name.optional(), slug: z.string().max(SLUG_MAX).regex(SLUG_PATTERN).optional() }),
    status: 201,
    response: templateView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      const copyId = await duplicateTemplate(deps.commands, actorOf(credential, request.id), row.id, body, new Date().toISOString());
      return answer(reply, credential.workspaceId, copyId);
    },
  });

  route(app, {
    method: 'POST',
    url: '/templates/:id/publish',
    summary: 'Publish a version',
    description:
      'Scope: `templates:write`. Freezes the version (default: the head) and makes it the one sends use. Publishing an older ' +
      'published version makes it live again.',
    tags,
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: idParams,
    body: z.strictObject({ version: z.number().int().positive().optional() }),
    response: templateView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      await publishTemplate(deps.commands, actorOf(credential, request.id), row.id, { ifMatch: templateIfMatch(request.headers), version: body.version ?? null }, new Date().toISOString());
      return answer(reply, credential.workspaceId, row.id);
    },
  });

  for (const [action, run, summary] of [
    ['archive', archiveTemplate, 'Archive a template (sends refuse it with 422 `template_archived`)'],
    ['unarchive', unarchiveTemplate, 'Unarchive a template'],
  ] as const) {
    route(app, {
      method: 'POST',
      url: `/templates/:id/${action}`,
      summary,
      description: `Scope: \`templates:write\`. ${summary}. Doing it twice changes nothing.`,
      tags,
      scope: 'templates:write',
      headers: ifMatchHeader('template'),
      params: idParams,
      response: templateView,
      handler: async ({ credential, params, request, reply }) => {
        const row = await rowOf(credential.workspaceId, params.id);
        await run(deps.commands, actorOf(credential, request.id), row.id, { ifMatch: templateIfMatch(request.headers) }, new Date().toISOString());
        return answer(reply, credential.workspaceId, row.id);
      },
    });
  }

  route(app, {
    method: 'GET',
    url: '/templates/:id/versions',
    summary: 'List versions',
    description: 'Scope: `templates:read`. Newest first; rows leave out `document` and `html` (read one version for them).',
    tags,
    scope: 'templates:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(versionView),
    handler: async ({ credential, params, query }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `template-versions:${row.id}`,
        rows: (after: [number] | null, limit) => listTemplateVersions(deps.db, row.id, limit, after ? Number(after[0]) : null),
        key: (v) => [v.version],
        view: (v) => viewVersion(row, v, false),
      });
    },
  });

  const versionOr422 = (row: TemplateRow, version: number) => templateVersionOr422(deps.db, row.id, version);

  route(app, {
    method: 'GET',
    url: '/templates/:id/versions/:version',
    summary: 'Read a version',
    tags,
    scope: 'templates:read',
    params: versionParams,
    response: versionView,
    handler: async ({ credential, params }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      return viewVersion(row, await versionOr422(row, params.version), true);
    },
  });

  route(app, {
    method: 'POST',
    url: '/templates/:id/versions/:version/restore',
    summary: 'Restore a version as a new draft',
    description: 'Scope: `templates:write`. The old content becomes a new head version (a draft); the old version is untouched.',
    tags,
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: versionParams,
    response: templateView,
    handler: async ({ credential, params, request, reply }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      await restoreTemplateVersion(deps.commands, actorOf(credential, request.id), row.id, { ifMatch: templateIfMatch(request.headers), version: params.version }, new Date().toISOString());
      return answer(reply, credential.workspaceId, row.id);
    },
  });

  route(app, {
    method: 'DELETE',
    url: '/templates/:id/versions/:version',
    summary: 'Delete a version',
    description: 'Scope: `templates:write`. The only version, the live one and the head are kept (409 `template_version_not_deletable`).',
    tags,
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: versionParams,
    response: z.object({ object: z.literal('template_version'), templateId: z.string(), version: z.number().int(), deleted: z.literal(true) }),
    handler: async ({ credential, params, request }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      await deleteTemplateVersion(deps.commands, actorOf(credential, request.id), row.id, { ifMatch: templateIfMatch(request.headers), version: params.version }, new Date().toISOString());
      return { object: 'template_version' as const, templateId: row.id, version: params.version, deleted: true as const };
    },
  });

  route(app, {
    method: 'POST',
    url: '/templates/:id/render',
    summary: 'Render a version',
    openToTestKeys: true,
    description:
      'Scope: `templates:read`. With `version`, renders that version (draft or published) as a preview. Without it, renders what a ' +
      'send would send: the published version, refused for an archived (422 `template_archived`) or unpublished (422 ' +
      '`template_not_published`) template. Unknown props are 422 `unknown_template_prop`.',
    tags,
    scope: 'templates:read',
    params: idParams,
    body: z.strictObject({
      version: z.number().int().positive().optional(),
      props: z.record(z.string(), z.unknown()).optional(),
      slots: z.record(z.string(), z.unknown()).optional(),
    }),
    response: z.object({
      object: z.literal('rendered_template'),
      templateId: z.string(),
      version: z.number().int(),
      subject: z.string(),
      html: z.string(),
      text: z.string(),
    }),
    handler: async ({ credential, params, body }) => {
      const row = await rowOf(credential.workspaceId, params.id);
      const number = body.version ?? sendableVersion({ archived: row.archived, publishedVersion: row.published_version });
      const v = await versionOr422(row, number);
      const rendered = await renderVersion(
        deps.renderer,
        { ...v, sanitisedHtml: v.sanitised_html },
        row.revision,
        { props: body.props, slots: body.slots },
      );
      return { object: 'rendered_template' as const, templateId: row.id, version: v.version, ...rendered };
    },
  });
}
