import type { Kysely } from 'kysely';
import type { ReadModels } from '../../../projections/tables.ts';
import { z } from 'zod';
import type { TemplateRevision } from '../../../commands/templates/handlers.ts';
import { ENGINES } from '../../../domain/templates/events.ts';
import { statusOf } from '../../../domain/templates/state.ts';
import {
  findTemplate,
  findTemplateVersion,
  type TemplateRow,
  type TemplateVersionRow,
} from '../../../projections/templates/queries.ts';
import { formatETag, ifMatchOf } from '../../etags.ts';
import type { AnswerHead } from '../../idempotency.ts';
import { lookup } from '../../lookups.ts';

export const idParams = z.object({ id: z.string().describe('A `tpl_` id or a slug.') });
export const templateName = z.string().trim().min(1).max(100);
export const versionParams = z.object({
  id: z.string(),
  version: z.coerce.number().int().positive().max(2_147_483_647),
});

const jsonList = z.array(z.record(z.string(), z.unknown()));

const versionFields = {
  id: z.string(),
  version: z.number().int(),
  state: z.enum(['draft', 'published']),
  engine: z.enum(ENGINES),
  subject: z.string(),
  slots: jsonList,
  props: jsonList,
  publishedAt: z.string().nullable(),
  createdAt: z.string(),
};

export const latestView = z.object({
  ...versionFields,
  document: z.record(z.string(), z.unknown()).nullable(),
  html: z.string().nullable(),
});

export const templateView = z.object({
  object: z.literal('template'),
  id: z.string(),
  slug: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  status: z.enum(['draft', 'active', 'archived']),
  publishedVersion: z.number().int().nullable(),
  latestVersion: z.number().int(),
  subject: z.string().optional().describe('Of the published version; absent while nothing is published.'),
  engine: z.enum(ENGINES).optional(),
  slots: jsonList.optional(),
  props: jsonList.optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
  latest: latestView.optional().describe('The head version; single reads only.'),
});

export const versionView = z.object({
  object: z.literal('template_version'),
  templateId: z.string(),
  ...versionFields,
  live: z.boolean().describe('The version sends use.'),
  restoredFrom: z.number().int().nullable(),
  document: z.record(z.string(), z.unknown()).nullable().optional().describe('Single reads only.'),
  html: z.string().nullable().optional().describe('As submitted; single reads only.'),
});

export function viewTemplate(row: TemplateRow, latest?: TemplateVersionRow): z.infer<typeof templateView> {
  const published = row.published_version !== null;
  return {
    object: 'template',
    id: row.id,
    slug: row.slug,
    name: row.name,
    description: row.description,
    status: statusOf({ archived: row.archived, publishedVersion: row.published_version }),
    publishedVersion: row.published_version,
    latestVersion: row.latest_version,
    ...(published ? { subject: row.subject!, engine: row.engine!, slots: row.slots!, props: row.props! } : {}),
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    ...(latest ? { latest: { ...versionCore(latest), document: latest.document, html: latest.html } } : {}),
  };
}

function versionCore(v: TemplateVersionRow) {
  return {
    id: v.id,
    version: v.version,
    state: v.published ? ('published' as const) : ('draft' as const),
    engine: v.engine,
    subject: v.subject,
    slots: v.slots,
    props: v.props,
    publishedAt: v.published_at?.toISOString() ?? null,
    createdAt: v.created_at.toISOString(),
  };
}

export function viewVersion(row: TemplateRow, v: TemplateVersionRow, full: boolean): z.infer<typeof versionView> {
  return {
    object: 'template_version',
    templateId: row.id,
    ...versionCore(v),
    live: row.published_version === v.version,
    restoredFrom: v.restored_from,
    ...(full ? { document: v.document, html: v.html } : {}),
  };
}

export const etagOf = (row: TemplateRow) => formatETag(row.revision, row.renames);

/** The revision and renames an If-Match names; null: unconditional. */
export function templateIfMatch(headers: Record<string, unknown>): TemplateRevision | null {
  const parts = ifMatchOf(headers, 2);
  return parts && { revision: parts[0]!, renames: parts[1]! };
}

export const templateOr404 = lookup(findTemplate, {
  code: 'resource_not_found',
  message: 'No such template.',
  param: 'id',
});
export const templateVersionOr422 = lookup(findTemplateVersion, {
  code: 'template_version_not_found',
  message: 'The template has no such version.',
  param: 'version',
});

/** The template as it now stands, with `latest` and its ETag. */
export async function answerTemplate(
  db: Kysely<ReadModels>,
  reply: AnswerHead,
  workspaceId: string,
  templateId: string,
): Promise<z.infer<typeof templateView>> {
  const row = await templateOr404(db, workspaceId, templateId);
  const latest = await findTemplateVersion(db, row.id, row.latest_version);
  reply.header('etag', etagOf(row));
  return viewTemplate(row, latest);
}
