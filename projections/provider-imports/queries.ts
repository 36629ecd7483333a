import { sql, type Kysely, type Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { ProviderImportsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type ProviderImportRow = Selectable<ProviderImportsTables['provider_imports']>;

export async function findProviderImport(
  db: Db,
  workspaceId: string,
  id: string,
): Promise<ProviderImportRow | undefined> {
  return db
    .selectFrom('provider_imports')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Newest first, `limit + 1` rows after the key. */
export async function listProviderImports(
  db: Db,
  workspaceId: string,
  limit: number,
  after: [string, string] | null,
): Promise<ProviderImportRow[]> {
  const { rows } = await sql<ProviderImportRow>`SELECT * FROM provider_imports WHERE workspace_id = ${workspaceId}
      ${after === null ? sql`` : sql`AND (created_at, id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY created_at DESC, id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}
