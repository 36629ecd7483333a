import type { Kysely } from 'kysely';

export interface ApiKeyRow {
  id: string;
  workspace_id: string;
  name: string | null;
  mode: 'live' | 'test';
  scopes: string[];
  role_id: string | null;
  address_allowlist: string[] | null;
  domain_allowlist: string[] | null;
  expires_at: Date | null;
  secret_hash: string;
  created_at: Date;
  created_by: string | null;
  rotated_at: Date | null;
  rotation_count: number;
  revoked_at: Date | null;
}

export async function findActiveKey(db: Kysely<any>, workspaceId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  return (await db
    .selectFrom('api_keys')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst()) as ApiKeyRow | undefined;
}

/** Unrevoked keys, newest first, after the cursor's (createdAt, id). */
export async function listKeys(db: Kysely<any>, workspaceId: string, limit: number, after: [string, string] | null): Promise<ApiKeyRow[]> {
  let q = db.selectFrom('api_keys').selectAll().where('workspace_id', '=', workspaceId).where('revoked_at', 'is', null);
  if (after) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after[0], after[1])));
  return (await q.orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit + 1).execute()) as ApiKeyRow[];
}

/** Unrevoked keys per role, for the roles' `apiKeys` count and `role_in_use`. */
export async function countKeysByRole(db: Kysely<any>, workspaceId: string): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['role_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('workspace_id', '=', workspaceId)
    .where('revoked_at', 'is', null)
    .where('role_id', 'is not', null)
    .groupBy('role_id')
    .execute();
  return new Map(rows.map((r) => [r.role_id as string, Number(r.n)]));
}
