import { sql, type Kysely, type Selectable } from 'kysely';
import type { ApiKeysTables } from './tables.ts';
import type { ReadModels } from '../tables.ts';

type Db = Kysely<ReadModels>;

export type ApiKeyRow = Selectable<ApiKeysTables['api_keys']>;

export async function findActiveKey(db: Db, workspaceId: string, keyId: string): Promise<ApiKeyRow | undefined> {
  return db
    .selectFrom('api_keys')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', keyId)
    .where('revoked_at', 'is', null)
    .executeTakeFirst();
}

/** Unrevoked keys, newest first, after the cursor's (createdAt, id). */
export async function listKeys(
  db: Db,
  workspaceId: string,
  limit: number,
  after: [string, string] | null,
): Promise<ApiKeyRow[]> {
  let q = db.selectFrom('api_keys').selectAll().where('workspace_id', '=', workspaceId).where('revoked_at', 'is', null);
  if (after) q = q.where(sql<boolean>`(created_at, id) < (${after[0]}, ${after[1]})`);
  return q
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute();
}

/** Unrevoked keys per role, for the roles' `apiKeys` count and `role_in_use`. */
export async function countKeysByRole(db: Db, workspaceId: string): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('api_keys')
    .select(['role_id', (eb) => eb.fn.countAll<number>().as('n')])
    .where('workspace_id', '=', workspaceId)
    .where('revoked_at', 'is', null)
    .where('role_id', 'is not', null)
    .groupBy('role_id')
    .execute();
  return new Map(rows.map((r) => [r.role_id!, Number(r.n)]));
}

/**
 * What a key may do now, as a request with it would be admitted (admission.ts): unrevoked and
 * unexpired, its scopes within its role's permissions (all of them without a role). Undefined when
 * the key may do nothing any more; `narrowed` when it holds only some addresses or domains.
 */
export async function keyAuthority(
  db: Db,
  workspaceId: string,
  keyId: string,
  now: Date,
): Promise<{ scopes: string[]; narrowed: boolean } | undefined> {
  const { rows } = await sql<{
    scopes: string[];
    role_id: string | null;
    permissions: string[] | null;
    narrowed: boolean;
  }>`
    SELECT k.scopes, k.role_id, r.permissions,
      (k.address_allowlist IS NOT NULL OR k.domain_allowlist IS NOT NULL) AS narrowed
    FROM api_keys k LEFT JOIN roles r ON r.id = k.role_id AND r.workspace_id = k.workspace_id
    WHERE k.workspace_id = ${workspaceId} AND k.id = ${keyId} AND k.revoked_at IS NULL
      AND (k.expires_at IS NULL OR k.expires_at > ${now})`.execute(db);
  const row = rows[0];
  if (!row) return undefined;
  const ceiling = row.role_id === null ? null : new Set(row.permissions ?? []);
  return { scopes: ceiling === null ? row.scopes : row.scopes.filter((s) => ceiling.has(s)), narrowed: row.narrowed };
}
