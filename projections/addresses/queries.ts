import { sql, type Kysely, type Selectable } from 'kysely';
import { findDomainByName } from '../domains/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { AddressesTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type AddressRow = Selectable<AddressesTables['addresses']>;
export type ForwardRow = Selectable<AddressesTables['address_forwards']>;
export type AppPasswordRow = Omit<Selectable<AddressesTables['address_app_passwords']>, 'password_hash'>;

/**
 * What a credential narrowed by allowlists reaches: addresses listed, and every address of a
 * domain listed (created later too). null: the whole workspace.
 */
export interface Reach {
  addresses: string[];
  domains: string[];
}

/**
 * What a narrowed credential sees, as SQL to follow a WHERE: rows whose `address` column is listed
 * or whose `domain` column is (a catch-all, `*@<domain>`, only through its domain, as
 * api/narrowing.ts `reaches` says); nothing is added for the whole workspace (null).
 */
export const withinReach = (reach: Reach | null, address: string, domain: string) =>
  reach === null
    ? sql``
    : sql`AND (${sql.ref(domain)} = ANY(${reach.domains}::text[])
        OR (${sql.ref(address)} = ANY(${reach.addresses}::text[]) AND ${sql.ref(address)} NOT LIKE '*@%'))`;

const ADDRESS = sql`a.id, a.workspace_id, a.address, a.local_part, a.domain, a.domain_id, a.enabled, a.time_zone, a.username, a.registered, a.created_at, a.updated_at`;

export async function findAddress(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<AddressRow | undefined> {
  const { rows } = await sql<AddressRow>`SELECT ${ADDRESS} FROM addresses a
    WHERE a.workspace_id = ${workspaceId} AND a.id = ${id} AND a.registered ${withinReach(reach, 'a.address', 'a.domain')}`.execute(
    db,
  );
  return rows[0];
}

/** Which of `ids` are (registered) addresses of the workspace: one query for a list a request names. */
export async function knownAddressIds(db: Db, workspaceId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { rows } = await sql<{ id: string }>`SELECT a.id FROM addresses a
    WHERE a.workspace_id = ${workspaceId} AND a.id = ANY(${ids}::text[]) AND a.registered`.execute(db);
  return new Set(rows.map((r) => r.id));
}

/**
 * A mailbox of the workspace by its address, whether or not it takes mail today: a registered
 * address, or `*@<domain>` on a domain of the workspace verified for receiving with its catch-all
 * on. What rules and signatures belong to.
 */
export async function findMailbox(
  db: Db,
  workspaceId: string,
  address: string,
): Promise<{ address: string; addressId: string | null; domainId: string } | undefined> {
  if (address.startsWith('*@')) {
    const domain = await findDomainByName(db, workspaceId, address.slice(2));
    return domain?.catch_all && domain.receiving_verified_at !== null
      ? { address, addressId: null, domainId: domain.id }
      : undefined;
  }
  const row = await findAddressByName(db, workspaceId, address);
  return row && { address, addressId: row.id, domainId: row.domain_id };
}

/** An address of the workspace by the address itself (lower-case, punycode domain). */
export async function findAddressByName(db: Db, workspaceId: string, address: string): Promise<AddressRow | undefined> {
  const { rows } = await sql<AddressRow>`SELECT ${ADDRESS} FROM addresses a
    WHERE a.workspace_id = ${workspaceId} AND a.address = ${address} AND a.registered`.execute(db);
  return rows[0];
}

/**
 * Alphabetical (byte order) after the cursor's (address, id): every address of the workspace, or
 * of one domain (by name), within what the caller reaches. A narrowed caller's page is merged from
 * one ordered index walk per domain it holds and an index lookup of the addresses it holds, so it
 * never scans the addresses it cannot see (an `OR` of the two made PostgreSQL read them all).
 */
export async function listAddresses(
  db: Db,
  workspaceId: string,
  filter: { domain?: string; reach: Reach | null },
  limit: number,
  after: [string, string] | null,
): Promise<AddressRow[]> {
  const later = after ? sql`AND (a.address, a.id) > (${after[0]}, ${after[1]})` : sql``;
  const onDomain = filter.domain === undefined ? sql`` : sql`AND a.domain = ${filter.domain}`;
  const page = sql`ORDER BY a.address, a.id LIMIT ${limit + 1}`;
  if (filter.reach === null) {
    const { rows } = await sql<AddressRow>`SELECT ${ADDRESS} FROM addresses a
      WHERE a.workspace_id = ${workspaceId} AND a.registered ${onDomain} ${later} ${page}`.execute(db);
    return rows;
  }
  const domains = filter.reach.domains.filter((d) => filter.domain === undefined || d === filter.domain);
  const { rows } = await sql<AddressRow>`SELECT * FROM (
      SELECT l.* FROM unnest(${domains}::text[]) AS d(name) CROSS JOIN LATERAL (
        SELECT ${ADDRESS} FROM addresses a
        WHERE a.workspace_id = ${workspaceId} AND a.registered AND a.domain = d.name ${later} ${page}
      ) l
      UNION ALL
      SELECT ${ADDRESS} FROM addresses a
      WHERE a.address = ANY(${filter.reach.addresses}::text[]) AND a.workspace_id = ${workspaceId} AND a.registered
        AND NOT (a.domain = ANY(${filter.reach.domains}::text[])) ${onDomain} ${later}
    ) a ${page}`.execute(db);
  return rows;
}

/** The addresses of a domain as its single read shows them (`{address, enabled}`), alphabetical. */
export async function addressesOfDomain(
  db: Db,
  workspaceId: string,
  domainId: string,
  reach: Reach | null,
): Promise<{ address: string; enabled: boolean }[]> {
  const { rows } = await sql<{ address: string; enabled: boolean }>`SELECT a.address, a.enabled FROM addresses a
    WHERE a.workspace_id = ${workspaceId} AND a.domain_id = ${domainId} AND a.registered ${withinReach(reach, 'a.address', 'a.domain')}
    ORDER BY a.address`.execute(db);
  return rows;
}

/** The forwards of some addresses, in the order they were added. */
export async function forwardsOf(db: Db, addressIds: string[]): Promise<ForwardRow[]> {
  if (addressIds.length === 0) return [];
  return db
    .selectFrom('address_forwards')
    .selectAll()
    .where('address_id', 'in', addressIds)
    .orderBy('address_id')
    .orderBy('added_revision')
    .orderBy('id')
    .execute();
}

/** The app passwords of some addresses, oldest first; never their hashes. */
export async function appPasswordsOf(db: Db, addressIds: string[]): Promise<AppPasswordRow[]> {
  if (addressIds.length === 0) return [];
  return db
    .selectFrom('address_app_passwords')
    .select(['id', 'workspace_id', 'address_id', 'name', 'created_at'])
    .where('address_id', 'in', addressIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** A forward by id in whichever workspace holds it, with its address: what the consent page shows. */
export async function findForwardAnywhere(
  db: Db,
  forwardId: string,
): Promise<(ForwardRow & { address: string; address_enabled: boolean }) | undefined> {
  const { rows } = await sql<ForwardRow & { address: string; address_enabled: boolean }>`
    SELECT f.*, a.address, a.enabled AS address_enabled FROM address_forwards f JOIN addresses a ON a.id = f.address_id
    WHERE f.id = ${forwardId} AND a.registered`.execute(db);
  return rows[0];
}

/**
 * What an SMTP submission client logging in as `login` (a custom login name, or an address
 * without one) may prove itself with: the address and its app passwords' hashes.
 */
export async function mailboxLogin(
  db: Db,
  login: string,
): Promise<{ address: AddressRow; passwordHashes: string[] } | undefined> {
  const name = login.trim().toLowerCase();
  const { rows } = await sql<AddressRow>`SELECT ${ADDRESS} FROM addresses a
    WHERE a.registered AND (a.username = ${name} OR (a.username IS NULL AND a.address = ${name}))`.execute(db);
  const address = rows[0];
  if (!address) return undefined;
  const hashes = await db
    .selectFrom('address_app_passwords')
    .select('password_hash')
    .where('address_id', '=', address.id)
    .execute();
  return { address, passwordHashes: hashes.map((h) => h.password_hash) };
}
