import type { Projector } from '../projector.ts';

/** Keys of every workspace, with the secret's hash for authentication. */
export const apiKeysProjector: Projector = {
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
  handles: ['ApiKeyCreated', 'ApiKeyRotated', 'ApiKeyRevoked', 'ApiKeysReassigned'],
  async apply(db, event) {
    const workspaceId = event.metadata.workspaceId as string;
    const d = event.data as any;
    switch (event.type) {
      case 'ApiKeyCreated':
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
        break;
      case 'ApiKeyRotated':
        await db
          .updateTable('api_keys')
          .set({ secret_hash: d.secretHash, rotated_at: d.rotatedAt, rotation_count: d.rotationCount })
          .where('id', '=', d.keyId)
          .execute();
        break;
      case 'ApiKeyRevoked':
        await db.updateTable('api_keys').set({ revoked_at: d.revokedAt }).where('id', '=', d.keyId).execute();
        break;
      case 'ApiKeysReassigned':
        await db
          .updateTable('api_keys')
          .set({ role_id: d.toRoleId })
          .where('workspace_id', '=', workspaceId)
          .where('id', 'in', d.keyIds)
          .execute();
        break;
    }
  },
};
