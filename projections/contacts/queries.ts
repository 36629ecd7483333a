import { sql, type Kysely, type Selectable } from 'kysely';
import type { ContactSource } from '../../domain/contacts/events.ts';
import type { ContactsTables } from './tables.ts';
import { idPatterns } from '../../domain/shared/ids.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

/** A contact as reads show it (not the search words). */
export type ContactRow = Omit<Selectable<ContactsTables['contacts']>, 'search'>;
export type AudienceRow = Selectable<ContactsTables['audiences']>;

export async function findContactByEmail(db: Db, workspaceId: string, email: string): Promise<ContactRow | undefined> {
  return db
    .selectFrom('contacts')
    .select(COLUMNS)
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
}

export async function findContactById(db: Db, workspaceId: string, id: string): Promise<ContactRow | undefined> {
  return db
    .selectFrom('contacts')
    .select(COLUMNS)
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** A contact named by its `con_` id or by its address (trimmed, lower-cased). */
export async function findContact(db: Db, workspaceId: string, idOrEmail: string): Promise<ContactRow | undefined> {
  return idPatterns.contact.test(idOrEmail)
    ? findContactById(db, workspaceId, idOrEmail)
    : findContactByEmail(db, workspaceId, idOrEmail);
}

/** The audiences a contact is in now. */
export async function contactAudienceIds(db: Db, workspaceId: string, contactId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('audience_members')
    .select('audience_id')
    .where('workspace_id', '=', workspaceId)
    .where('contact_id', '=', contactId)
    .where('left_at', 'is', null)
    .orderBy('joined_at')
    .orderBy('audience_id')
    .execute();
  return rows.map((r) => r.audience_id);
}

export interface ContactFilter {
  /** Words of the address or name; see `searchQuery`. */
  q?: string;
  source?: ContactSource;
}

/** The sort key: `lastSeenAt` with never-seen as -infinity, so they come last and the keyset stays one row comparison. */
const seen = sql`coalesce(last_seen_at, '-infinity'::timestamptz)`;

/** The columns of a contact row (not the search vector). */
const COLUMNS = [
  'workspace_id',
  'id',
  'email',
  'name',
  'notes',
  'attributes',
  'source',
  'last_seen_at',
  'created_at',
  'updated_at',
] as const;

/**
 * `q` over the `search` words of a contact (runs of letters and digits of the address and the
 * name, lower-cased): every word of `q` must be a word of the contact, and the last one may be the
 * beginning of a word (search as you type). Null when `q` holds no letter or digit.
 *
 * `indexed` are the words the GIN index looks up; `rest` are checked on the rows it finds. A word
 * in a tenth or more of the book (per the column's statistics, `common`) is left to `rest`:
 * looking it up reads a posting list as long as the book, and a common beginning (a partial
 * match) reads it without the skipping GIN does for whole words. When every word is that common,
 * the rarest is looked up.
 */
export interface WordStats {
  /** The most common words and their share of rows. */
  words: ReadonlyMap<string, number>;
  /** The share of the least common of them: every other word is rarer. */
  floor: number;
}

export function searchQuery(
  q: string,
  stats: WordStats = { words: new Map(), floor: 0 },
): { all: string; indexed: string; rest: string | null; share: number | null } | null {
  const common = stats.words;
  const words = q
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w !== '');
  if (words.length === 0) return null;
  const last = words.length - 1;
  const terms = words.map((w, i) => `'${w}'${i === last ? ':*' : ''}`);
  const frequency = words.map((w, i) => {
    if (i !== last) return common.get(w) ?? stats.floor;
    let sum = 0;
    for (const [word, f] of common) if (word.startsWith(w)) sum += f;
    return Math.min(1, Math.max(sum, stats.floor));
  });
  let picked = words.map((_, i) => i).filter((i) => frequency[i]! < COMMON);
  if (picked.length === 0) picked = [frequency.indexOf(Math.min(...frequency))];
  const rest = terms.filter((_, i) => !picked.includes(i));
  return {
    all: terms.join(' & '),
    indexed: picked.map((i) => terms[i]).join(' & '),
    rest: rest.length > 0 ? rest.join(' & ') : null,
    // The share of rows expected to hold every word (as if words were independent); null without statistics.
    share: common.size === 0 ? null : frequency.reduce((a, b) => a * b, 1),
  };
}

/** A word in this share of the book or more is not looked up in the index. */
const COMMON = 0.1;
let commonCache: { at: number; stats: WordStats } | null = null;

/** The most common words of the book and their share of rows (from ANALYZE), kept for a minute. */
async function commonWords(db: Db): Promise<WordStats> {
  if (commonCache && Date.now() - commonCache.at < 60_000) return commonCache.stats;
  const row = (
    await sql<{ elems: string[] | null; freqs: number[] | null }>`
      SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs
      FROM pg_stats WHERE schemaname = 'public' AND tablename = 'contacts' AND attname = 'search'`.execute(db)
  ).rows[0];
  const words = new Map<string, number>();
  const elems = row?.elems ?? [];
  for (const [i, w] of elems.entries()) words.set(w, row!.freqs![i]!);
  // After the per-word shares, pg_stats lists their minimum, maximum and the share of nulls.
  const stats = { words, floor: elems.length > 0 ? (row!.freqs![elems.length] ?? 0) : 0 };
  commonCache = { at: Date.now(), stats };
  return stats;
}

/** Rows walked in sort order before a search decides how to find the rest of its page. */
const WALK = 2000;
/** The most rows a longer walk may cover. */
const WALK_MAX = 200_000;

/**
 * Most recently seen first, never-seen last, then id descending. The cursor is the last row's
 * (lastSeenAt or null, id); the row comparison on the coalesced key stays an index bound.
 *
 * A search walks the next WALK rows in sort order and keeps the matches: a common word fills the
 * page there. From the matches found it estimates how common the words are: common enough, and a
 * longer walk (sized to fill the page) costs less than collecting every match; otherwise the
 * matches are few and collecting all of them through the word index and sorting them is cheap.
 * The cost follows the page and the matches, not the size of the book, and does not rest on the
 * planner's guess between the two plans.
 */
export async function listContacts(
  db: Db,
  workspaceId: string,
  filter: ContactFilter,
  limit: number,
  after: [string | null, string] | null,
  /** Tests pass a small one to reach every path with few rows. */
  walkRows = WALK,
): Promise<ContactRow[]> {
  const base = () => {
    let q = db.selectFrom('contacts').where('workspace_id', '=', workspaceId);
    if (filter.source) q = q.where('source', '=', filter.source);
    if (after) q = q.where(sql<boolean>`(${seen}, id) < (${after[0] ?? '-infinity'}::timestamptz, ${after[1]})`);
    return q;
  };
  const search = filter.q === undefined ? null : searchQuery(filter.q, await commonWords(db));
  if (search === null) {
    return base()
      .select(COLUMNS)
      .orderBy(seen, 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
  }
  const walk = (rows: number) =>
    db
      .selectFrom(
        base()
          .select([...COLUMNS, 'search'])
          .orderBy(seen, 'desc')
          .orderBy('id', 'desc')
          .limit(rows)
          .as('w'),
      )
      .select(COLUMNS)
      .where(sql<boolean>`search @@ ${search.all}::tsquery`)
      .orderBy(sql`coalesce(last_seen_at, '-infinity'::timestamptz)`, 'desc')
      .orderBy('id', 'desc')
      .limit(limit + 1)
      .execute();
  // Statistics that expect not even two matches in the walk send the search straight to the index.
  const walked = search.share !== null && search.share * walkRows < 2 ? [] : await walk(walkRows);
  if (walked.length > limit) return walked;
  // At least 10 matches in WALK rows (0.5%): walking on to fill the page reads fewer rows than the matches are.
  if (walked.length >= 10) {
    const longer = await walk(Math.min(WALK_MAX, Math.ceil(((limit + 1) * walkRows * 2) / walked.length)));
    if (longer.length > limit) return longer;
  }
  // `search || ''` is the same words, but not the indexed expression: only `indexed` is looked up in the index.
  let matches = base().select(COLUMNS).where(sql<boolean>`search @@ ${search.indexed}::tsquery`);
  if (search.rest !== null) matches = matches.where(sql<boolean>`(search || ''::tsvector) @@ ${search.rest}::tsquery`);
  const found = await sql<ContactRow>`
    WITH m AS MATERIALIZED (${matches})
    SELECT * FROM m ORDER BY coalesce(last_seen_at, '-infinity'::timestamptz) DESC, id DESC LIMIT ${limit + 1}`.execute(
    db,
  );
  return found.rows;
}

export interface ContactRef {
  id: string;
  email: string;
}

/** Contacts of a workspace named by address or id, in one round trip (a batch names up to 100). */
export async function lookupContacts(
  db: Db,
  workspaceId: string,
  emails: string[],
  ids: string[],
): Promise<{ byEmail: Map<string, ContactRef>; byId: Map<string, ContactRef> }> {
  const byEmail = new Map<string, ContactRef>();
  const byId = new Map<string, ContactRef>();
  if (emails.length === 0 && ids.length === 0) return { byEmail, byId };
  const { rows } = await sql<ContactRef>`SELECT id, email FROM contacts
    WHERE workspace_id = ${workspaceId} AND (email = ANY(${emails}::text[]) OR id = ANY(${ids}::text[]))`.execute(db);
  for (const r of rows) {
    byEmail.set(r.email, r);
    byId.set(r.id, r);
  }
  return { byEmail, byId };
}

/** The contacts in an audience now, those that joined last first (a task's tools read a few). */
export async function listAudienceContacts(
  db: Db,
  workspaceId: string,
  audienceId: string,
  limit: number,
): Promise<ContactRow[]> {
  return db
    .selectFrom('audience_members as m')
    .innerJoin('contacts as c', 'c.id', 'm.contact_id')
    .select(COLUMNS.map((column) => `c.${column}` as const))
    .where('m.workspace_id', '=', workspaceId)
    .where('c.workspace_id', '=', workspaceId)
    .where('m.audience_id', '=', audienceId)
    .where('m.left_at', 'is', null)
    .orderBy('m.joined_at', 'desc')
    .orderBy('c.id', 'desc')
    .limit(limit)
    .execute();
}

export async function findAudience(db: Db, workspaceId: string, id: string): Promise<AudienceRow | undefined> {
  return db
    .selectFrom('audiences')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Where an audience stands in the list: the default first, then newest first (created_at, id descending). */
export interface AudienceKey {
  isDefault: boolean;
  createdAt: Date;
  id: string;
}

/** The place of a live or deleted audience of the workspace; undefined for an id it never had. */
export async function audienceKey(db: Db, workspaceId: string, id: string): Promise<AudienceKey | undefined> {
  const { rows } = await sql<AudienceKey>`
    SELECT builtin IS NOT NULL AS "isDefault", created_at AS "createdAt", id FROM audiences WHERE workspace_id = ${workspaceId} AND id = ${id}
    UNION ALL
    SELECT false, created_at, id FROM audience_tombstones WHERE workspace_id = ${workspaceId} AND id = ${id}
    LIMIT 1`.execute(db);
  return rows[0];
}

/** The rows after `after` in list order. */
export async function listAudiences(
  db: Db,
  workspaceId: string,
  limit: number,
  after: AudienceKey | null,
): Promise<AudienceRow[]> {
  let q = db.selectFrom('audiences').selectAll().where('workspace_id', '=', workspaceId);
  if (after) {
    q = q.where('builtin', 'is', null);
    if (!after.isDefault) q = q.where(sql<boolean>`(created_at, id) < (${after.createdAt}, ${after.id})`);
  }
  return q
    .orderBy(sql`builtin IS NULL`)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

export async function allAudiences(db: Db, workspaceId: string): Promise<AudienceRow[]> {
  return db
    .selectFrom('audiences')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy(sql`builtin IS NULL`)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute();
}
