import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { SignaturesTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type SignatureRow = Selectable<SignaturesTables['signatures']>;

/**
 * What a narrowed credential sees: signatures of the addresses it holds, and of every address of
 * the domains it holds, catch-alls included (a catch-all only through its whole domain).
 */
export async function findSignature(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<SignatureRow | undefined> {
  const { rows } = await sql<SignatureRow>`SELECT s.* FROM signatures s
    WHERE s.workspace_id = ${workspaceId} AND s.id = ${id} ${withinReach(reach, 's.address', 's.domain')}`.execute(db);
  return rows[0];
}

/** By address (byte order), then oldest first, after the cursor's (address, createdAt, id). */
export async function listSignatures(
  db: Db,
  workspaceId: string,
  filter: { address?: string; reach: Reach | null },
  limit: number,
  after: [string, string, string] | null,
): Promise<SignatureRow[]> {
  const { rows } = await sql<SignatureRow>`SELECT s.* FROM signatures s
    WHERE s.workspace_id = ${workspaceId} ${filter.address === undefined ? sql`` : sql`AND s.address = ${filter.address}`}
      ${withinReach(filter.reach, 's.address', 's.domain')}
      ${after ? sql`AND (s.address, s.created_at, s.id) > (${after[0]}, ${after[1]}::timestamptz, ${after[2]})` : sql``}
    ORDER BY s.address, s.created_at, s.id LIMIT ${limit + 1}`.execute(db);
  return rows;
}
