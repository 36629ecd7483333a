import type { Kysely } from 'kysely';
import { defineProjector, type Projected } from '../projector.ts';
import type { ApiKeysTables } from './tables.ts';

type Db = Kysely<ApiKeysTables>;

/** Keys of every workspace, with the secret's hash for authentication. */
export const apiKeysProjector = defineProjector<ApiKeysTables>()({
  name: 'api_keys',
  version: 1,
  tables: ['api_keys'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.api_keys (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      name text,
      mode text NOT NULL,
      scopes text[] NOT NULL,
      role_id text,
      address_allowlist text[],
      domain_allowlist text[],
      expires_at timestamptz,
      secret_hash text NOT NULL,
      created_at timestamptz NOT NULL,
      created_by text,
      rotated_at timestamptz,
      rotation_count integer NOT NULL DEFAULT 0,
      revoked_at timestamptz
    );
    CREATE INDEX IF NOT EXISTS api_keys_workspace_created ON ${s}.api_keys (workspace_id, created_at DESC, id DESC);`,
  on: { ApiKeyCreated: createKey, ApiKeyRotated: rotateKey, ApiKeyRevoked: revokeKey, ApiKeysReassigned: reassignKeys },
});

async function createKey(db: Db, { metadata: { workspaceId }, data: d }: Projected<'ApiKeyCreated'>): Promise<void> {
  await db
    .insertInto('api_keys')
    .values({
      id: d.keyId,
      workspace_id: workspaceId,
      name: d.name,
      mode: d.mode,
      scopes: d.scopes,
      role_id: d.roleId,
      address_allowlist: d.addressAllowlist,
      domain_allowlist: d.domainAllowlist,
      expires_at: d.expiresAt,
      secret_hash: d.secretHash,
      created_at: d.createdAt,
      created_by: d.createdBy,
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

async function rotateKey(db: Db, { data: d }: Projected<'ApiKeyRotated'>): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ secret_hash: d.secretHash, rotated_at: d.rotatedAt, rotation_count: d.rotationCount })
    .where('id', '=', d.keyId)
    .execute();
}

async function revokeKey(db: Db, { data: d }: Projected<'ApiKeyRevoked'>): Promise<void> {
  await db.updateTable('api_keys').set({ revoked_at: d.revokedAt }).where('id', '=', d.keyId).execute();
}

async function reassignKeys(
  db: Db,
  { metadata: { workspaceId }, data: d }: Projected<'ApiKeysReassigned'>,
): Promise<void> {
  await db
    .updateTable('api_keys')
    .set({ role_id: d.toRoleId })
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', d.keyIds)
    .execute();
}
