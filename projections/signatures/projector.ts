import { catchAllOwner } from '../../domain/shared/mailbox-owners.ts';
import { sql, type Kysely } from 'kysely';
import { domainOf } from '../../domain/shared/allowlists.ts';
import { defineProjector } from '../projector.ts';
import type { SignaturesTables } from './tables.ts';

/** An address or a domain's catch-all is gone: its signatures go with it, now and when replayed. */
async function gone(db: Kysely<SignaturesTables>, owner: string) {
  await sql`INSERT INTO signature_gone_owners (owner) VALUES (${owner}) ON CONFLICT DO NOTHING`.execute(db);
  await sql`DELETE FROM signatures WHERE owner = ${owner}`.execute(db);
}

/**
 * Signatures as lists and reads show them. The address's and the domain's deletions come from
 * their own streams: a signature created while its address was being deleted is never shown (its
 * owner's id is never used again).
 */
export const signaturesProjector = defineProjector<SignaturesTables>()({
  name: 'signatures',
  version: 1,
  tables: ['signatures', 'signature_gone_owners'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.signatures (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      owner text NOT NULL,
      address text COLLATE "C" NOT NULL,
      domain text NOT NULL,
      name text NOT NULL,
      html text NOT NULL,
      is_default boolean NOT NULL,
      is_reply_default boolean NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.signature_gone_owners (owner text PRIMARY KEY);`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS signatures_workspace ON ${s}.signatures (workspace_id, address, created_at, id);
    CREATE INDEX IF NOT EXISTS signatures_owner ON ${s}.signatures (owner);`,
  on: {
    SignatureCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      if (d.isDefault) await sql`UPDATE signatures SET is_default = false WHERE owner = ${d.owner}`.execute(db);
      if (d.isReplyDefault)
        await sql`UPDATE signatures SET is_reply_default = false WHERE owner = ${d.owner}`.execute(db);
      await sql`INSERT INTO signatures (id, workspace_id, owner, address, domain, name, html, is_default, is_reply_default, created_at, updated_at)
        SELECT ${d.signatureId}, ${workspaceId}, ${d.owner}, ${d.address}, ${domainOf(d.address)}, ${d.name}, ${d.html},
          ${d.isDefault}, ${d.isReplyDefault}, ${d.createdAt}, ${d.createdAt}
        WHERE NOT EXISTS (SELECT 1 FROM signature_gone_owners WHERE owner = ${d.owner})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    SignatureUpdated: async (db, { data: d }) => {
      await sql`UPDATE signatures SET name = ${d.name}, html = ${d.html}, updated_at = ${d.updatedAt} WHERE id = ${d.signatureId}`.execute(
        db,
      );
    },
    SignatureDefaultsChanged: async (db, { data: d }) => {
      await sql`UPDATE signatures SET is_default = (id = ${d.defaultId ?? ''}), is_reply_default = (id = ${d.replyDefaultId ?? ''})
        WHERE owner = ${d.owner}`.execute(db);
    },
    SignatureDeleted: async (db, { data: d }) => {
      await sql`DELETE FROM signatures WHERE id = ${d.signatureId}`.execute(db);
    },
    AddressDeleted: async (db, { data: d }) => gone(db, d.addressId),
    DomainDeleted: async (db, { data: d }) => gone(db, catchAllOwner(d.domainId)),
  },
});
