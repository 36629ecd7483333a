import { sql, type Kysely, type Selectable } from 'kysely';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { FilesTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type FileRow = Selectable<FilesTables['files']>;

/**
 * A narrowed credential's files: those of the mailboxes it reaches (an address it holds, or any
 * mailbox of a domain it holds whole). An upload of the whole workspace (no mailbox) is for the
 * credentials that reach the whole workspace.
 */
export async function findFile(
  db: Db,
  partition: string,
  reach: Reach | null,
  id: string,
): Promise<FileRow | undefined> {
  const { rows } = await sql<FileRow>`SELECT f.* FROM files f
    WHERE f.workspace_id = ${partition} AND f.id = ${id} ${withinReach(reach, 'f.address', 'f.domain')}`.execute(db);
  return rows[0];
}

/** Several files by id at once (as `findFile` reaches them), by id; an id it does not reach is missing. */
export async function findFiles(
  db: Db,
  partition: string,
  reach: Reach | null,
  ids: string[],
): Promise<Map<string, FileRow>> {
  if (ids.length === 0) return new Map();
  const { rows } = await sql<FileRow>`SELECT f.* FROM files f
    WHERE f.workspace_id = ${partition} AND f.id = ANY(${ids}::text[])
      ${withinReach(reach, 'f.address', 'f.domain')}`.execute(db);
  return new Map(rows.map((r) => [r.id, r]));
}

export interface FileFilter {
  address?: string;
  source?: 'attachment' | 'upload';
  threadId?: string;
  reach: Reach | null;
}

/** Newest first, after the cursor's (createdAt, id). */
export async function listFiles(
  db: Db,
  partition: string,
  filter: FileFilter,
  limit: number,
  after: [string, string] | null,
): Promise<FileRow[]> {
  const { rows } = await sql<FileRow>`SELECT f.* FROM files f
    WHERE f.workspace_id = ${partition}
      ${filter.address === undefined ? sql`` : sql`AND f.address = ${filter.address}`}
      ${filter.source === undefined ? sql`` : sql`AND f.source = ${filter.source}`}
      ${filter.threadId === undefined ? sql`` : sql`AND f.thread_id = ${filter.threadId}`}
      ${withinReach(filter.reach, 'f.address', 'f.domain')}
      ${after === null ? sql`` : sql`AND (f.created_at, f.id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY f.created_at DESC, f.id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}
