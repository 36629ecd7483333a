import crypto from 'node:crypto';
import { z } from 'zod';
import { ApiError } from './errors/api-error.ts';

export const limitParam = (max = 100, fallback = 25) => z.coerce.number().int().min(1).max(max).default(fallback);

export const cursorParam = z.string().min(1).max(2000).optional();

export const pageSchema = (item: z.ZodType) =>
  z.object({ object: z.literal('list'), data: z.array(item), hasMore: z.boolean(), nextCursor: z.string().nullable() });

export interface Page<T> {
  object: 'list';
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** The page parameters of every list: `?limit=&cursor=`. */
export interface PageQuery {
  limit: number;
  cursor?: string;
}

/** A page from rows fetched with `limit + 1`, the extra row telling whether more exist. */
function pageOf<R, T>(rows: R[], limit: number, view: (row: R) => T, cursorOf: (last: R) => string): Page<T> {
  const hasMore = rows.length > limit;
  const shown = hasMore ? rows.slice(0, limit) : rows;
  return {
    object: 'list',
    data: shown.map(view),
    hasMore,
    nextCursor: hasMore ? cursorOf(shown[shown.length - 1]!) : null,
  };
}

/**
 * A list with opaque cursors (`Cursors.list`): every cursor list of the api is one of these.
 * `rows` reads `limit + 1` rows after the sort key `after` (null: from the start); `key` is a
 * row's sort key as `rows` takes it back; `name` binds cursors to the list (put the sort and the
 * parent in it: `templates:name`, `automation-runs:<id>`), so a cursor of another is refused.
 */
export interface CursorList<R, K extends unknown[], T> {
  name: string;
  rows(after: K | null, limit: number): Promise<R[]>;
  key(row: NoInfer<R>): K;
  view(row: R): T;
}

/** The sort key of the lists newest first by creation: `(created_at, id)` descending. */
export const createdKey = (row: { created_at: Date; id: string }): [string, string] => [
  row.created_at.toISOString(),
  row.id,
];

/** Ends a walk by id (`IdCursorList.after`): the row the cursor named is gone, and so is every row after it. */
export const WALK_OVER = Symbol('walk over');

/**
 * The variant for the lists whose cursor the spec fixes as the id of the last row (audiences,
 * contact events): `after` resolves the id to the row's sort key; null refuses the cursor (400
 * `invalid_cursor`: `refused` says what it had to be), and a list may instead end the walk
 * (`WALK_OVER`, an empty page) when that row is gone (docs/decisions/contact-events.md, "A
 * cursor naming no event").
 */
export interface IdCursorList<R extends { id: string }, K, T> {
  refused: string;
  after(id: string): Promise<K | null | typeof WALK_OVER>;
  rows(after: K | null, limit: number): Promise<R[]>;
  view(row: R): T;
}

export async function listByLastId<R extends { id: string }, K, T>(
  page: PageQuery,
  list: IdCursorList<R, K, T>,
): Promise<Page<T>> {
  let after: K | null = null;
  if (page.cursor !== undefined) {
    const key = await list.after(page.cursor);
    if (key === WALK_OVER) return pageOf([], page.limit, list.view, (last) => last.id);
    if (key === null) throw new ApiError('invalid_cursor', `The cursor is not ${list.refused}.`, 'cursor', 400);
    after = key;
  }
  return pageOf(await list.rows(after, page.limit), page.limit, list.view, (last) => last.id);
}

/**
 * Opaque cursors: the last row's sort key, bound to the list (and sort) and the workspace that
 * produced it, signed so a tampered or transplanted cursor is refused.
 */
export class Cursors {
  constructor(private readonly secret: Buffer) {}

  encode(list: string, workspaceId: string, key: unknown[]): string {
    const body = Buffer.from(JSON.stringify({ l: list, w: workspaceId, k: key })).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  /** The sort key of the row the previous page ended on, or null when no cursor was sent. */
  decode(cursor: string | undefined, list: string, workspaceId: string): unknown[] | null {
    if (cursor === undefined) return null;
    const invalid = () => new ApiError('invalid_cursor', 'The cursor was not handed out by this list.', 'cursor', 400);
    const [body, signature, extra] = cursor.split('.');
    if (!body || !signature || extra !== undefined) throw invalid();
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !crypto.timingSafeEqual(expected, given)) throw invalid();
    let parsed: { l?: unknown; w?: unknown; k?: unknown };
    try {
      parsed = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    } catch {
      throw invalid();
    }
    if (parsed.l !== list || parsed.w !== workspaceId || !Array.isArray(parsed.k)) throw invalid();
    return parsed.k;
  }

  /** A page of `list` for `workspaceId`: the cursor checked and decoded, the rows read, the next cursor signed. */
  async list<R, K extends unknown[], T>(
    workspaceId: string,
    page: PageQuery,
    list: CursorList<R, K, T>,
  ): Promise<Page<T>> {
    const after = this.decode(page.cursor, list.name, workspaceId) as K | null;
    const rows = await list.rows(after, page.limit);
    return pageOf(rows, page.limit, list.view, (last) => this.encode(list.name, workspaceId, list.key(last)));
  }

  private sign(body: string): string {
    return crypto.createHmac('sha256', this.secret).update(body).digest('base64url').slice(0, 22);
  }
}
