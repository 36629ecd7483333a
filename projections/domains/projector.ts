import { sql } from 'kysely';
import { DEFAULT_TIME_ZONE } from '../../domain/shared/time-zones.ts';
import { defineProjector } from '../projector.ts';
import type { DomainsTables } from './tables.ts';

/**
 * The domains of every workspace, as lists and single reads show them and as sending will look
 * them up by name. A name is at most one live domain across the service (domain-names holds it),
 * so the name index serves "which workspace owns this domain" for inbound mail too.
 */
export const domainsProjector = defineProjector<DomainsTables>()({
  name: 'domains',
  version: 2,
  tables: ['domains'],
  ddl: (s) => `
    CREATE TABLE IF NOT EXISTS ${s}.domains (
      workspace_id text NOT NULL,
      id uuid PRIMARY KEY,
      domain text NOT NULL,
      created_at timestamptz NOT NULL,
      dkim_key_id text NOT NULL,
      dkim_selector text NOT NULL,
      dkim_public_key text NOT NULL,
      pending_dkim_key_id text,
      pending_dkim_selector text,
      pending_dkim_public_key text,
      catch_all boolean NOT NULL DEFAULT false,
      catch_all_time_zone text NOT NULL DEFAULT 'UTC',
      dmarc_policy text,
      sender_name text,
      logo text,
      tracking_host text,
      tracking_status text NOT NULL DEFAULT 'not_configured',
      tracking_error text,
      storage_host text,
      storage_status text NOT NULL DEFAULT 'not_configured',
      storage_error text,
      last_checked_at timestamptz,
      receiving_verified_at timestamptz,
      receiving_error text,
      sending_status text NOT NULL DEFAULT 'pending',
      sending_error text,
      ever_verified boolean NOT NULL DEFAULT false,
      checked_records jsonb NOT NULL DEFAULT '[]',
      dmarc jsonb
    );`,
  // Byte order ("C"): names are ASCII (punycode), and the list is alphabetical by them, hyphens and dots included.
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS domains_workspace_name ON ${s}.domains (workspace_id, domain COLLATE "C", id);
    CREATE INDEX IF NOT EXISTS domains_name ON ${s}.domains (domain);`,
  on: {
    DomainAdded: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .insertInto('domains')
        .values({
          workspace_id: workspaceId,
          id: d.domainId,
          domain: d.domain,
          created_at: d.createdAt,
          dkim_key_id: d.dkim.keyId,
          dkim_selector: d.dkim.selector,
          dkim_public_key: d.dkim.publicKey,
          pending_dkim_key_id: null,
          pending_dkim_selector: null,
          pending_dkim_public_key: null,
          catch_all: false,
          catch_all_time_zone: DEFAULT_TIME_ZONE,
          dmarc_policy: null,
          sender_name: null,
          logo: null,
          tracking_host: null,
          tracking_status: 'not_configured',
          tracking_error: null,
          storage_host: null,
          storage_status: 'not_configured',
          storage_error: null,
          last_checked_at: null,
          receiving_verified_at: null,
          receiving_error: null,
          sending_status: 'pending',
          sending_error: null,
          ever_verified: false,
          checked_records: '[]',
          dmarc: 'null',
        })
        .onConflict((oc) => oc.column('id').doNothing())
        .execute();
    },
    DomainSettingsUpdated: async (db, { data: d }) => {
      await db
        .updateTable('domains')
        .set({
          catch_all: d.catchAll,
          catch_all_time_zone: d.catchAllTimeZone,
          dmarc_policy: d.dmarcPolicy,
          sender_name: d.senderName,
          logo: d.logo,
        })
        .where('id', '=', d.domainId)
        .execute();
    },
    DomainHostSet: async (db, { data: d }) => {
      const status = d.host === null ? 'not_configured' : 'pending';
      await db
        .updateTable('domains')
        .set(
          d.kind === 'tracking'
            ? { tracking_host: d.host, tracking_status: status, tracking_error: null }
            : { storage_host: d.host, storage_status: status, storage_error: null },
        )
        .where('id', '=', d.domainId)
        .execute();
    },
    DomainDkimKeyRotated: async (db, { data: d }) => {
      await db
        .updateTable('domains')
        .set({
          pending_dkim_key_id: d.dkim.keyId,
          pending_dkim_selector: d.dkim.selector,
          pending_dkim_public_key: d.dkim.publicKey,
        })
        .where('id', '=', d.domainId)
        .execute();
    },
    DomainDkimKeyActivated: async (db, { data: d }) => {
      await sql`UPDATE domains SET dkim_key_id = pending_dkim_key_id, dkim_selector = pending_dkim_selector,
          dkim_public_key = pending_dkim_public_key, pending_dkim_key_id = NULL, pending_dkim_selector = NULL, pending_dkim_public_key = NULL
        WHERE id = ${d.domainId} AND pending_dkim_key_id = ${d.keyId}`.execute(db);
    },
    DomainChecked: async (db, { data: d }) => {
      await db
        .updateTable('domains')
        .set((eb) => ({
          last_checked_at: d.checkedAt,
          receiving_verified_at: d.receiving.verifiedAt,
          receiving_error: d.receiving.error,
          sending_status: d.sending.status,
          sending_error: d.sending.error,
          ever_verified: d.sending.status === 'verified' ? true : eb.ref('ever_verified'),
          checked_records: JSON.stringify(d.records),
          dmarc: JSON.stringify(d.dmarc),
          tracking_status: d.tracking.status,
          tracking_error: d.tracking.error,
          storage_status: d.storage.status,
          storage_error: d.storage.error,
        }))
        .where('id', '=', d.domainId)
        .execute();
    },
    DomainDeleted: async (db, { data: d }) => {
      await db.deleteFrom('domains').where('id', '=', d.domainId).execute();
    },
  },
});
