import crypto from 'node:crypto';
import { z } from 'zod';
import { ApiError } from './errors/api-error.ts';

export const limitParam = (max = 100, fallback = 25) =>
  z.coerce.number().int().min(1).max(max).default(fallback);

export const cursorParam = z.string().min(1).max(2000).optional();

export const pageSchema = (item: z.ZodType) =>
  z.object({ object: z.literal('list'), data: z.array(item), hasMore: z.boolean(), nextCursor: z.string().nullable() });

export interface Page<T> {
  object: 'list';
  data: T[];
  hasMore: boolean;
  nextCursor: string | null;
}

/** A page from rows fetched with `limit + 1`, the extra row telling whether more exist. */
function pageOf<R, T>(rows: R[], limit: number, view: (row: R) => T, cursorOf: (last: R) => string): Page<T> {
  const hasMore = rows.length > limit;
  const shown = hasMore ? rows.slice(0, limit) : rows;
  return { object: 'list', data: shown.map(view), hasMore, nextCursor: hasMore ? cursorOf(shown[shown.length - 1]!) : null };
}

/**
 * A page of a list whose cursor the spec fixes as the id of the last row (audiences, contact
 * events). Such a route resolves the id back to the row's sort key itself, and must keep a walk
 * going when that row is gone (see docs/decisions.md).
 */
export function pageByLastId<R extends { id: string }, T>(rows: R[], limit: number, view: (row: R) => T): Page<T> {
  return pageOf(rows, limit, view, (last) => last.id);
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

  /** A page whose `nextCursor` is the signed sort key of its last row. */
  page<R, T>(rows: R[], limit: number, list: string, workspaceId: string, keyOf: (row: R) => unknown[], view: (row: R) => T): Page<T> {
    return pageOf(rows, limit, view, (last) => this.encode(list, workspaceId, keyOf(last)));
  }

  private sign(body: string): string {
    return crypto.createHmac('sha256', this.secret).update(body).digest('base64url').slice(0, 22);
  }
}
