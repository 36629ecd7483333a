import { z } from 'zod';
import {
  archiveTemplate,
  duplicateTemplate,
  publishTemplate,
  unarchiveTemplate,
} from '../../../commands/templates/handlers.ts';
import { renderVersion } from '../../../commands/templates/render.ts';
import { sendableVersion } from '../../../domain/templates/decide.ts';
import { SLUG_MAX, SLUG_PATTERN } from '../../../domain/template-names/decide.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ifMatchHeader } from '../../etags.ts';
import { operation, type Operation } from '../../route.ts';
import {
  answerTemplate,
  idParams,
  templateIfMatch,
  templateName,
  templateOr404,
  templateVersionOr422,
  templateView,
} from './views.ts';

/** `/templates/:id/<action>`: duplicate, publish, archive, unarchive, render. */
export const templateActions = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'POST',
    url: '/templates/:id/duplicate',
    operationId: 'duplicateTemplate',
    errors: ['resource_not_found', 'template_name_taken', 'template_slug_taken', 'workspace_limit_reached'],
    summary: 'Duplicate a template',
    description:
      'Scope: `templates:write`. A new draft template with the head content; name defaults to `<name> (copy)`.',
    scope: 'templates:write',
    params: idParams,
    body: z.strictObject({
      name: templateName.optional(),
      slug: z.string().max(SLUG_MAX).regex(SLUG_PATTERN).optional(),
    }),
    status: 201,
    response: templateView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      const copyId = await duplicateTemplate(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        body,
        new Date().toISOString(),
      );
      return answerTemplate(deps.db, reply, credential.workspaceId, copyId);
    },
  }),

  operation({
    method: 'POST',
    url: '/templates/:id/publish',
    operationId: 'publishTemplate',
    errors: ['resource_not_found', 'template_version_not_found', 'invalid_template', 'version_conflict'],
    summary: 'Publish a version',
    description:
      'Scope: `templates:write`. Freezes the version (default: the head) and makes it the one sends use. Publishing an older ' +
      'published version makes it live again.',
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: idParams,
    body: z.strictObject({ version: z.number().int().positive().optional() }),
    response: templateView,
    handler: async ({ credential, params, body, request, reply }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      await publishTemplate(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: templateIfMatch(request.headers), version: body.version ?? null },
        new Date().toISOString(),
      );
      return answerTemplate(deps.db, reply, credential.workspaceId, row.id);
    },
  }),

  ...(
    [
      [
        'archive',
        'archiveTemplate',
        archiveTemplate,
        'Archive a template (sends refuse it with 422 `template_archived`)',
      ],
      ['unarchive', 'unarchiveTemplate', unarchiveTemplate, 'Unarchive a template'],
    ] as const
  ).map(([action, operationId, run, summary]) =>
    operation({
      method: 'POST',
      url: `/templates/:id/${action}`,
      operationId,
      errors: ['resource_not_found', 'version_conflict'],
      summary,
      description: `Scope: \`templates:write\`. ${summary}. Doing it twice changes nothing.`,
      scope: 'templates:write',
      headers: ifMatchHeader('template'),
      params: idParams,
      response: templateView,
      handler: async ({ credential, params, request, reply }) => {
        const row = await templateOr404(deps.db, credential.workspaceId, params.id);
        await run(
          deps.commands,
          actorOf(credential, request.id),
          row.id,
          { ifMatch: templateIfMatch(request.headers) },
          new Date().toISOString(),
        );
        return answerTemplate(deps.db, reply, credential.workspaceId, row.id);
      },
    }),
  ),

  operation({
    method: 'POST',
    url: '/templates/:id/render',
    operationId: 'renderTemplate',
    errors: [
      'resource_not_found',
      'template_archived',
      'template_not_published',
      'template_version_not_found',
      'unknown_template_prop',
      'unknown_template_slot',
    ],
    summary: 'Render a version',
    openToTestKeys: true,
    description:
      'Scope: `templates:read`. With `version`, renders that version (draft or published) as a preview. Without it, renders what a ' +
      'send would send: the published version, refused for an archived (422 `template_archived`) or unpublished (422 ' +
      '`template_not_published`) template. Unknown props are 422 `unknown_template_prop`.',
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
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      const number =
        body.version ?? sendableVersion({ archived: row.archived, publishedVersion: row.published_version });
      const v = await templateVersionOr422(deps.db, row.id, number);
      const rendered = await renderVersion(deps.renderer, { ...v, sanitisedHtml: v.sanitised_html }, row.revision, {
        props: body.props,
        slots: body.slots,
      });
      return { object: 'rendered_template' as const, templateId: row.id, version: v.version, ...rendered };
    },
  }),
];
