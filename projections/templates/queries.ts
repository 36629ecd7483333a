import { sql, type Kysely, type Selectable } from 'kysely';
import { idPatterns } from '../../domain/shared/ids.ts';
import type { TemplatesTables } from './tables.ts';

type Db = Kysely<TemplatesTables>;

const ROW = ['id', 'workspace_id', 'name', 'slug', 'description', 'archived', 'published_version', 'latest_version', 'subject', 'engine', 'slots', 'props', 'revision', 'renames', 'created_at', 'updated_at'] as const;

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

export async function findTemplateVersion(db: Db, templateId: string, version: number): Promise<TemplateVersionRow | undefined> {
  return db.selectFrom('template_versions').selectAll().where('template_id', '=', templateId).where('version', '=', version).executeTakeFirst();
}

export async function listTemplateVersions(db: Db, templateId: string, limit: number, before: number | null): Promise<TemplateVersionRow[]> {
  let q = db.selectFrom('template_versions').selectAll().where('template_id', '=', templateId);
  if (before !== null) q = q.where('version', '<', before);
  return q.orderBy('version', 'desc').limit(limit + 1).execute();
}

export const TEMPLATE_SORTS = ['updated-newest', 'updated-oldest', 'created-newest', 'created-oldest', 'name', 'name-reversed'] as const;
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
export const searchWords = (search: string) => search.toLowerCase().split(/\s+/).filter((w) => w.length > 0);

/**
 * Every word of `search` must be a substring of the row's search text (`%` and `_` literal).
 * When no template of the workspace matches that way, close spellings count: each word must
 * then be similar to some word of the text (pg_trgm word similarity). Deciding the mode on the
 * whole workspace, not the page, keeps one walk in one mode.
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
  let q = filtered().select(ROW);
  const words = filter.search ? searchWords(filter.search) : [];
  if (words.length > 0) {
    const exact = sql.join(words.map((w) => sql`search LIKE ${'%' + escapeLike(w) + '%'}`), sql` AND `);
    const loose = sql.join(words.map((w) => sql`${w} <% search`), sql` AND `);
    // One round trip: the uncorrelated EXISTS runs once, as an init plan.
    const anyExact = filtered().select(sql`1`.as('one')).where(sql<boolean>`${exact}`);
    q = q.where(sql<boolean>`CASE WHEN EXISTS (${anyExact}) THEN ${exact} ELSE ${loose} END`);
  }
  if (after) {
    const op = direction === 'desc' ? '<' : '>';
    const value = column === 'name_key' ? after[0] : new Date(after[0]);
    q = q.where(sql<boolean>`(${sql.ref(column)}, id) ${sql.raw(op)} (${value}, ${after[1]})`);
  }
  return q.orderBy(column, direction).orderBy('id', direction).limit(limit + 1).execute();
}
