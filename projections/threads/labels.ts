import { sql, type Kysely, type Selectable } from 'kysely';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { ThreadsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type LabelRow = Selectable<ThreadsTables['labels']>;

/**
 * What a narrowed credential sees, as on threads: the labels of the mailboxes of the addresses it
 * holds and of the domains it holds whole (a catch-all only through its domain).
 */
export async function findLabel(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<LabelRow | undefined> {
  const { rows } = await sql<LabelRow>`SELECT l.* FROM labels l
    WHERE l.workspace_id = ${workspaceId} AND l.id = ${id} ${withinReach(reach, 'l.address', 'l.domain')}`.execute(db);
  return rows[0];
}

/** By mailbox (byte order), then oldest first, after the cursor's (address, createdAt, id). */
export async function listLabels(
  db: Db,
  workspaceId: string,
  filter: { address?: string; reach: Reach | null },
  limit: number,
  after: [string, string, string] | null,
): Promise<LabelRow[]> {
  const { rows } = await sql<LabelRow>`SELECT l.* FROM labels l
    WHERE l.workspace_id = ${workspaceId} ${filter.address === undefined ? sql`` : sql`AND l.address = ${filter.address}`}
      ${withinReach(filter.reach, 'l.address', 'l.domain')}
      ${after ? sql`AND (l.address, l.created_at, l.id) > (${after[0]}, ${after[1]}::timestamptz, ${after[2]})` : sql``}
    ORDER BY l.address, l.created_at, l.id LIMIT ${limit + 1}`.execute(db);
  return rows;
}
