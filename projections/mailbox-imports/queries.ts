import { sql, type Kysely, type Selectable } from 'kysely';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { MailboxImportsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type MailboxImportRow = Selectable<MailboxImportsTables['mailbox_imports']>;

/** An import of the workspace into a mailbox `reach` covers (null: the whole workspace). */
export async function findMailboxImport(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<MailboxImportRow | undefined> {
  const { rows } = await sql<MailboxImportRow>`SELECT * FROM mailbox_imports i
    WHERE i.workspace_id = ${workspaceId} AND i.id = ${id} ${withinReach(reach, 'i.address', 'i.domain')}`.execute(db);
  return rows[0];
}

/** Newest first, `limit + 1` rows after the key. */
export async function listMailboxImports(
  db: Db,
  workspaceId: string,
  filter: { reach: Reach | null; addressId: string | undefined },
  limit: number,
  after: [string, string] | null,
): Promise<MailboxImportRow[]> {
  const { rows } = await sql<MailboxImportRow>`SELECT * FROM mailbox_imports i WHERE i.workspace_id = ${workspaceId}
      ${withinReach(filter.reach, 'i.address', 'i.domain')}
      ${filter.addressId === undefined ? sql`` : sql`AND i.address_id = ${filter.addressId}`}
      ${after === null ? sql`` : sql`AND (i.created_at, i.id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY i.created_at DESC, i.id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}
