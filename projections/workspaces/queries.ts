import type { Kysely, Selectable } from 'kysely';
import type { ReadModels } from '../tables.ts';
import type { WorkspacesTables } from './tables.ts';

export type WorkspaceRow = Selectable<WorkspacesTables['workspaces']>;

export async function findWorkspace(db: Kysely<ReadModels>, workspaceId: string): Promise<WorkspaceRow | undefined> {
  return db.selectFrom('workspaces').selectAll().where('id', '=', workspaceId).executeTakeFirst();
}
