import { sql, type Kysely, type Selectable } from 'kysely';
import type { UnsubscribeSource } from '../../domain/unsubscribes/events.ts';
import type { ReadModels } from '../tables.ts';
import type { UnsubscribesTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type UnsubscribeRow = Selectable<UnsubscribesTables['unsubscribes']>;

export interface UnsubscribeFilter {
  email?: string;
  /** An audience id, or `all` for the unsubscribes from everything. */
  audienceId?: string;
  source?: UnsubscribeSource;
}

export async function findUnsubscribe(db: Db, workspaceId: string, id: string): Promise<UnsubscribeRow | undefined> {
  return db
    .selectFrom('unsubscribes')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** The unsubscribes of one address that hold, for its preferences page. */
export async function unsubscribesOf(db: Db, workspaceId: string, email: string): Promise<UnsubscribeRow[]> {
  return db
    .selectFrom('unsubscribes')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .execute();
}

/** Newest first, after the cursor's (createdAt, id). */
export async function listUnsubscribes(
  db: Db,
  workspaceId: string,
  filter: UnsubscribeFilter,
  limit: number,
  after: [string, string] | null,
): Promise<UnsubscribeRow[]> {
  let q = db.selectFrom('unsubscribes').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.email) q = q.where('email', '=', filter.email);
  if (filter.source) q = q.where('source', '=', filter.source);
  if (filter.audienceId === 'all') q = q.where('audience_id', 'is', null);
  else if (filter.audienceId) q = q.where('audience_id', '=', filter.audienceId);
  if (after) q = q.where(sql<boolean>`(created_at, id) < (${after[0]}, ${after[1]})`);
  return q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}
