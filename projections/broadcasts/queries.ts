import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { BroadcastsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type BroadcastRow = Selectable<BroadcastsTables['broadcasts']>;

export async function findBroadcast(db: Db, workspaceId: string, id: string): Promise<BroadcastRow | undefined> {
  return db
    .selectFrom('broadcasts')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Newest first, `limit + 1` rows after the key. */
export async function listBroadcasts(
  db: Db,
  workspaceId: string,
  limit: number,
  after: [string, string] | null,
): Promise<BroadcastRow[]> {
  const { rows } = await sql<BroadcastRow>`SELECT * FROM broadcasts WHERE workspace_id = ${workspaceId}
      ${after === null ? sql`` : sql`AND (created_at, id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}
