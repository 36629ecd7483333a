import { sql } from 'kysely';
import { defineProjector } from '../projector.ts';
import type { AddressesTables } from './tables.ts';

/**
 * Addresses with their forwards and app passwords, from each address's stream and the
 * workspace's registry (which makes a row visible: `registered`).
 */
export const addressesProjector = defineProjector<AddressesTables>()({
  name: 'addresses',
  version: 2,
  tables: ['addresses', 'address_forwards', 'address_app_passwords'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.addresses (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      address text COLLATE "C" NOT NULL,
      local_part text NOT NULL,
      domain text NOT NULL,
      domain_id text NOT NULL,
      enabled boolean NOT NULL,
      time_zone text NOT NULL DEFAULT 'UTC',
      username text,
      registered boolean NOT NULL,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.address_forwards (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      address_id text NOT NULL,
      destination text NOT NULL,
      status text NOT NULL,
      enabled boolean NOT NULL,
      keep_copy boolean NOT NULL,
      nonce text,
      consent_requested_at timestamptz,
      answered_at timestamptz,
      created_at timestamptz NOT NULL,
      added_revision integer NOT NULL
    );
    CREATE TABLE IF NOT EXISTS ${s}.address_app_passwords (
      id text PRIMARY KEY,
      workspace_id text NOT NULL,
      address_id text NOT NULL,
      name text NOT NULL,
      password_hash text NOT NULL,
      created_at timestamptz NOT NULL
    );`,
  // addresses_domain_id serves a domain's single read (its `addresses`, by domain id): without it,
  // a scan of every address of the workspace (29 ms at 100,000, 9.7 ms with it for 10,000 rows).
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS addresses_workspace ON ${s}.addresses (workspace_id, address, id) WHERE registered;
    CREATE INDEX IF NOT EXISTS addresses_domain ON ${s}.addresses (workspace_id, domain, address, id) WHERE registered;
    CREATE INDEX IF NOT EXISTS addresses_domain_id ON ${s}.addresses (workspace_id, domain_id, address) WHERE registered;
    CREATE INDEX IF NOT EXISTS addresses_address ON ${s}.addresses (address) WHERE registered;
    CREATE INDEX IF NOT EXISTS addresses_username ON ${s}.addresses (username) WHERE registered AND username IS NOT NULL;
    CREATE INDEX IF NOT EXISTS address_forwards_address ON ${s}.address_forwards (address_id, added_revision, id);
    CREATE INDEX IF NOT EXISTS address_app_passwords_address ON ${s}.address_app_passwords (address_id, created_at, id);`,
  on: {
    AddressCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`INSERT INTO addresses (id, workspace_id, address, local_part, domain, domain_id, enabled, registered, created_at, updated_at)
        VALUES (${d.addressId}, ${workspaceId}, ${d.address}, ${d.localPart}, ${d.domain}, ${d.domainId}, ${d.enabled}, false, ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    AddressRegistered: async (db, { data: d }) => {
      await sql`UPDATE addresses SET registered = true WHERE id = ${d.addressId}`.execute(db);
    },
    AddressUnregistered: async (db, { data: d }) => {
      await sql`UPDATE addresses SET registered = false WHERE id = ${d.addressId}`.execute(db);
    },
    AddressUpdated: async (db, { data: d }) => {
      await sql`UPDATE addresses SET enabled = ${d.enabled}, updated_at = ${d.updatedAt} WHERE id = ${d.addressId}`.execute(
        db,
      );
    },
    AddressTimeZoneSet: async (db, { data: d }) => {
      await sql`UPDATE addresses SET time_zone = ${d.timeZone}, updated_at = ${d.setAt} WHERE id = ${d.addressId}`.execute(
        db,
      );
    },
    AddressDeleted: async (db, { data: d }) => {
      await sql`DELETE FROM address_forwards WHERE address_id = ${d.addressId}`.execute(db);
      await sql`DELETE FROM address_app_passwords WHERE address_id = ${d.addressId}`.execute(db);
      await sql`DELETE FROM addresses WHERE id = ${d.addressId}`.execute(db);
    },
    AddressForwardAdded: async (db, { metadata: { workspaceId }, data: d, revision }) => {
      await sql`INSERT INTO address_forwards (id, workspace_id, address_id, destination, status, enabled, keep_copy, nonce, consent_requested_at, created_at, added_revision)
        VALUES (${d.forwardId}, ${workspaceId}, ${d.addressId}, ${d.destination}, ${d.status}, true, ${d.keepCopy}, ${d.nonce},
          ${d.nonce === null ? null : d.addedAt}, ${d.addedAt}, ${revision})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    AddressForwardUpdated: async (db, { data: d }) => {
      await sql`UPDATE address_forwards SET enabled = ${d.enabled}, keep_copy = ${d.keepCopy} WHERE id = ${d.forwardId}`.execute(
        db,
      );
    },
    AddressForwardRemoved: async (db, { data: d }) => {
      await sql`DELETE FROM address_forwards WHERE id = ${d.forwardId}`.execute(db);
    },
    AddressForwardConsentRequested: async (db, { data: d }) => {
      await sql`UPDATE address_forwards SET status = 'pending', nonce = ${d.nonce}, consent_requested_at = ${d.requestedAt}, answered_at = NULL
        WHERE id = ${d.forwardId}`.execute(db);
    },
    AddressForwardAnswered: async (db, { data: d }) => {
      await sql`UPDATE address_forwards SET status = ${d.status}, nonce = NULL, answered_at = ${d.answeredAt} WHERE id = ${d.forwardId}`.execute(
        db,
      );
    },
    AddressLoginSet: async (db, { data: d }) => {
      await sql`UPDATE addresses SET username = ${d.username}, updated_at = ${d.setAt} WHERE id = ${d.addressId}`.execute(
        db,
      );
    },
    AppPasswordCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`INSERT INTO address_app_passwords (id, workspace_id, address_id, name, password_hash, created_at)
        VALUES (${d.appPasswordId}, ${workspaceId}, ${d.addressId}, ${d.name}, ${d.passwordHash}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    AppPasswordRevoked: async (db, { data: d }) => {
      await sql`DELETE FROM address_app_passwords WHERE id = ${d.appPasswordId}`.execute(db);
    },
  },
});
