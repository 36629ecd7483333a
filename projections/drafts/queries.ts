import { sql, type Kysely, type Selectable } from 'kysely';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { DraftsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type DraftRow = Selectable<DraftsTables['drafts']>;

/** A narrowed credential's drafts: those from the addresses it holds and the domains it holds whole. */
export async function findDraft(
  db: Db,
  partition: string,
  reach: Reach | null,
  id: string,
): Promise<DraftRow | undefined> {
  const { rows } = await sql<DraftRow>`SELECT d.* FROM drafts d
    WHERE d.workspace_id = ${partition} AND d.id = ${id} ${withinReach(reach, 'd.address', 'd.domain')}`.execute(db);
  return rows[0];
}

/** Newest first, after the cursor's (createdAt, id); editing a draft does not move it. */
export async function listDrafts(
  db: Db,
  partition: string,
  filter: { address?: string; reach: Reach | null },
  limit: number,
  after: [string, string] | null,
): Promise<DraftRow[]> {
  const { rows } = await sql<DraftRow>`SELECT d.* FROM drafts d
    WHERE d.workspace_id = ${partition}
      ${filter.address === undefined ? sql`` : sql`AND d.address = ${filter.address}`}
      ${withinReach(filter.reach, 'd.address', 'd.domain')}
      ${after === null ? sql`` : sql`AND (d.created_at, d.id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY d.created_at DESC, d.id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}
