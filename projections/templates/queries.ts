import { sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import { idPatterns } from '../../domain/shared/ids.ts';
import type { TemplatesTables } from './tables.ts';
import { closeWords, editsAllowed } from './typos.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

const ROW = [
  'id',
  'workspace_id',
  'name',
  'slug',
  'description',
  'archived',
  'published_version',
  'latest_version',
  'subject',
  'engine',
  'slots',
  'props',
  'revision',
  'renames',
  'created_at',
  'updated_at',
] as const;

/** A template as lists and reads show it (not the columns that only order or filter). */
export type TemplateRow = Pick<Selectable<TemplatesTables['templates']>, (typeof ROW)[number]>;
export type TemplateVersionRow = Selectable<TemplatesTables['template_versions']>;

/** By `tpl_` id or by slug (slugs have no underscore, so the two never collide). */
export async function findTemplate(db: Db, workspaceId: string, idOrSlug: string): Promise<TemplateRow | undefined> {
  return db
    .selectFrom('templates')
    .select(ROW)
    .where('workspace_id', '=', workspaceId)
    .where('registered', '=', true)
    .where(idPatterns.template.test(idOrSlug) ? 'id' : 'slug', '=', idOrSlug)
    .executeTakeFirst();
}

export async function findTemplateVersion(
  db: Db,
  templateId: string,
  version: number,
): Promise<TemplateVersionRow | undefined> {
  return db
    .selectFrom('template_versions')
    .selectAll()
    .where('template_id', '=', templateId)
    .where('version', '=', version)
    .executeTakeFirst();
}

export async function listTemplateVersions(
  db: Db,
  templateId: string,
  limit: number,
  before: number | null,
): Promise<TemplateVersionRow[]> {
  let q = db.selectFrom('template_versions').selectAll().where('template_id', '=', templateId);
  if (before !== null) q = q.where('version', '<', before);
  return q
    .orderBy('version', 'desc')
    .limit(limit + 1)
    .execute();
}

export const TEMPLATE_SORTS = [
  'updated-newest',
  'updated-oldest',
  'created-newest',
  'created-oldest',
  'name',
  'name-reversed',
] as const;
export type TemplateSort = (typeof TEMPLATE_SORTS)[number];

const SORT: Record<TemplateSort, { column: 'updated_at' | 'created_at' | 'name_key'; direction: 'asc' | 'desc' }> = {
  'updated-newest': { column: 'updated_at', direction: 'desc' },
  'updated-oldest': { column: 'updated_at', direction: 'asc' },
  'created-newest': { column: 'created_at', direction: 'desc' },
  'created-oldest': { column: 'created_at', direction: 'asc' },
  name: { column: 'name_key', direction: 'asc' },
  'name-reversed': { column: 'name_key', direction: 'desc' },
};

/** The cursor key of a row under a sort: the sort column and the id that breaks ties. */
export function templateCursorOf(sort: TemplateSort, row: TemplateRow): [string, string] {
  const column = SORT[sort].column;
  const value = column === 'name_key' ? row.name.toLowerCase() : (row[column] as Date).toISOString();
  return [value, row.id];
}

export interface TemplateFilter {
  status?: 'draft' | 'active' | 'archived';
  search?: string;
}

const escapeLike = (word: string) => word.replace(/[\\%_]/g, '\\$&');
export const searchWords = (search: string) =>
  search
    .toLowerCase()
    .split(/\s+/)
    .filter((w) => w.length > 0);

/**
 * Every word of `search` must be a substring of the row's search text (`%` and `_` literal).
 * When no template of the workspace matches that way, typos count too: each word must then be a
 * substring of the text or a few edits from one of its words (typos.ts: a letter missing, extra,
 * doubled, wrong, or two swapped). Deciding the mode on the whole workspace, not the page, keeps
 * one walk in one mode. An exact search is one round trip. A loose one reads the search text of
 * the workspace's templates (at most 200, TEMPLATES_MAX), matches them here and reads the page of
 * those that match: three.
 */
export async function listTemplates(
  db: Db,
  workspaceId: string,
  filter: TemplateFilter,
  sort: TemplateSort,
  limit: number,
  after: [string, string] | null,
): Promise<TemplateRow[]> {
  const { column, direction } = SORT[sort];
  const filtered = () => {
    let q = db.selectFrom('templates').where('workspace_id', '=', workspaceId).where('registered', '=', true);
    if (filter.status === 'archived') q = q.where('archived', '=', true);
    if (filter.status === 'active') q = q.where('archived', '=', false).where('published_version', 'is not', null);
    if (filter.status === 'draft') q = q.where('archived', '=', false).where('published_version', 'is', null);
    return q;
  };
  const page = (matching: RawBuilder<boolean> | null) => {
    let q = filtered().select(ROW);
    if (matching) q = q.where(matching);
    if (after) {
      const op = direction === 'desc' ? '<' : '>';
      const value = column === 'name_key' ? after[0] : new Date(after[0]);
      q = q.where(sql<boolean>`(${sql.ref(column)}, id) ${sql.raw(op)} (${value}, ${after[1]})`);
    }
    return q
      .orderBy(column, direction)
      .orderBy('id', direction)
      .limit(limit + 1)
      .execute();
  };
  const words = filter.search ? searchWords(filter.search) : [];
  if (words.length === 0) return page(null);
  const exact = sql<boolean>`${sql.join(
    words.map((w) => sql`search LIKE ${`%${escapeLike(w)}%`}`),
    sql` AND `,
  )}`;
  const rows = await page(exact);
  if (rows.length > 0 || !words.some((w) => editsAllowed(w) > 0)) return rows;
  // None when some template matches exactly: this empty page is then the end of an exact walk.
  const anyExact = filtered().select(sql`1`.as('one')).where(exact);
  const texts = await filtered().select(['id', 'search']).where(sql<boolean>`NOT EXISTS (${anyExact})`).execute();
  const ids = withTypos(words, texts);
  return ids.length === 0 ? [] : page(sql<boolean>`id = ANY(${ids})`);
}

/** The templates every word matches as typed (a substring) or with typos (close to one of its words). */
function withTypos(words: string[], templates: { id: string; search: string }[]): string[] {
  const wordsOf = new Map(templates.map((t) => [t.id, new Set(t.search.split(/[^\p{L}\p{N}]+/u))]));
  const known = [...new Set([...wordsOf.values()].flatMap((w) => [...w]))];
  const close = words.map((w) => new Set(closeWords(w, known)));
  return templates
    .filter((t) => words.every((w, i) => t.search.includes(w) || [...close[i]!].some((c) => wordsOf.get(t.id)!.has(c))))
    .map((t) => t.id);
}

/** Every version's id and number, without their content. */
export async function versionNumbers(db: Db, templateId: string): Promise<{ id: string; version: number }[]> {
  return db.selectFrom('template_versions').select(['id', 'version']).where('template_id', '=', templateId).execute();
}
