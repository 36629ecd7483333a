import { z } from 'zod';
import { deleteTemplateVersion, restoreTemplateVersion } from '../../../commands/templates/handlers.ts';
import { listTemplateVersions } from '../../../projections/templates/queries.ts';
import { actorOf } from '../../credential.ts';
import type { ApiDeps } from '../../deps.ts';
import { ifMatchHeader } from '../../etags.ts';
import { cursorParam, limitParam, pageSchema } from '../../paging.ts';
import { operation, type Operation } from '../../route.ts';
import {
  answerTemplate,
  idParams,
  templateIfMatch,
  templateOr404,
  templateVersionOr422,
  templateView,
  versionParams,
  versionView,
  viewVersion,
} from './views.ts';

/** `/templates/:id/versions…`: a template's versions. */
export const versionOperations = (deps: ApiDeps): Operation[] => [
  operation({
    method: 'GET',
    url: '/templates/:id/versions',
    operationId: 'listTemplateVersions',
    errors: ['resource_not_found'],
    summary: 'List versions',
    description:
      'Scope: `templates:read`. Newest first; rows leave out `document` and `html` (read one version for them).',
    scope: 'templates:read',
    params: idParams,
    query: z.strictObject({ limit: limitParam(), cursor: cursorParam }),
    response: pageSchema(versionView),
    handler: async ({ credential, params, query }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      return deps.cursors.list(credential.workspaceId, query, {
        name: `template-versions:${row.id}`,
        rows: (after: [number] | null, limit) =>
          listTemplateVersions(deps.db, row.id, limit, after ? Number(after[0]) : null),
        key: (v) => [v.version],
        view: (v) => viewVersion(row, v, false),
      });
    },
  }),

  operation({
    method: 'GET',
    url: '/templates/:id/versions/:version',
    operationId: 'getTemplateVersion',
    errors: ['resource_not_found', 'template_version_not_found'],
    summary: 'Read a version',
    scope: 'templates:read',
    params: versionParams,
    response: versionView,
    handler: async ({ credential, params }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      return viewVersion(row, await templateVersionOr422(deps.db, row.id, params.version), true);
    },
  }),

  operation({
    method: 'POST',
    url: '/templates/:id/versions/:version/restore',
    operationId: 'restoreTemplateVersion',
    errors: ['resource_not_found', 'template_version_not_found', 'version_conflict'],
    summary: 'Restore a version as a new draft',
    description:
      'Scope: `templates:write`. The old content becomes a new head version (a draft); the old version is untouched.',
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: versionParams,
    response: templateView,
    handler: async ({ credential, params, request, reply }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      await restoreTemplateVersion(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: templateIfMatch(request.headers), version: params.version },
        new Date().toISOString(),
      );
      return answerTemplate(deps.db, reply, credential.workspaceId, row.id);
    },
  }),

  operation({
    method: 'DELETE',
    url: '/templates/:id/versions/:version',
    operationId: 'deleteTemplateVersion',
    errors: ['resource_not_found', 'template_version_not_found', 'template_version_not_deletable', 'version_conflict'],
    summary: 'Delete a version',
    description:
      'Scope: `templates:write`. The only version, the live one and the head are kept (409 `template_version_not_deletable`).',
    scope: 'templates:write',
    headers: ifMatchHeader('template'),
    params: versionParams,
    response: z.object({
      object: z.literal('template_version'),
      templateId: z.string(),
      version: z.number().int(),
      deleted: z.literal(true),
    }),
    handler: async ({ credential, params, request }) => {
      const row = await templateOr404(deps.db, credential.workspaceId, params.id);
      await deleteTemplateVersion(
        deps.commands,
        actorOf(credential, request.id),
        row.id,
        { ifMatch: templateIfMatch(request.headers), version: params.version },
        new Date().toISOString(),
      );
      return {
        object: 'template_version' as const,
        templateId: row.id,
        version: params.version,
        deleted: true as const,
      };
    },
  }),
];
