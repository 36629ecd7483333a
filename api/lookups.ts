import type { Kysely } from 'kysely';
import { ApiError } from './errors/api-error.ts';

/** What a lookup answers when its query finds nothing. */
export interface Missing {
  code: string;
  message: string;
  param: string | null;
  /** The catalogue's status for `code` unless given. */
  status?: number;
  /** The shape of the resource's ids: a key of another shape names nothing, and is answered so without a query. */
  pattern?: RegExp;
}

/**
 * The one way to write a lookup that answers 404 (or the error the spec names for a missing row):
 * a query of the read side and what to answer when it finds nothing. The key is the query's last
 * argument. A foreign workspace's id answers exactly like a missing one, as every query filters on
 * the workspace.
 *
 *   export const audienceOr404 = lookup(findAudience, { code: 'audience_not_found', message: 'No such audience.', param: 'id' });
 *   const row = await audienceOr404(deps.db, workspaceId, params.id);
 */
export function lookup<DB, A extends unknown[], R>(
  query: (db: Kysely<DB>, ...args: A) => Promise<R | undefined>,
  missing: Missing,
) {
  return async (db: Kysely<DB>, ...args: A): Promise<R> => {
    const key = args[args.length - 1];
    const row =
      missing.pattern && typeof key === 'string' && !missing.pattern.test(key) ? undefined : await query(db, ...args);
    if (row === undefined) throw new ApiError(missing.code, missing.message, missing.param, missing.status);
    return row;
  };
}
