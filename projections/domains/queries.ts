import { sql, type Kysely, type Selectable } from 'kysely';
import type { SendingStanding } from '../../domain/domains/sending.ts';
import type { ReadModels } from '../tables.ts';
import type { DomainsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type DomainRow = Selectable<DomainsTables['domains']>;

/** A domain of the workspace by id: what every route of a domain and its addresses starts from. */
export async function findDomain(db: Db, workspaceId: string, id: string): Promise<DomainRow | undefined> {
  return db
    .selectFrom('domains')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', id)
    .executeTakeFirst();
}

/** Which of `ids` are domains of the workspace: one query for a list a request names. */
export async function knownDomainIds(db: Db, workspaceId: string, ids: string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db
    .selectFrom('domains')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('id', 'in', ids)
    .execute();
  return new Set(rows.map((r) => r.id));
}

/**
 * A domain of the workspace by name (lower-case, punycode: `checkDomainName` gives that form), as
 * a sender's address names it.
 */
export async function findDomainByName(db: Db, workspaceId: string, name: string): Promise<DomainRow | undefined> {
  return db
    .selectFrom('domains')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('domain', '=', name)
    .executeTakeFirst();
}

/** The storage host of the workspace's first domain (by name) whose storage is `active`, or null. */
export async function activeStorageHost(db: Db, workspaceId: string): Promise<string | null> {
  const row = await db
    .selectFrom('domains')
    .select('storage_host')
    .where('workspace_id', '=', workspaceId)
    .where('storage_status', '=', 'active')
    .where('storage_host', 'is not', null)
    .orderBy('domain')
    .executeTakeFirst();
  return row?.storage_host ?? null;
}

/** Alphabetical (byte order of the punycode names), after the cursor's (domain, id). */
export async function listDomains(
  db: Db,
  workspaceId: string,
  limit: number,
  after: [string, string] | null,
): Promise<DomainRow[]> {
  let q = db.selectFrom('domains').selectAll().where('workspace_id', '=', workspaceId);
  if (after) q = q.where(sql<boolean>`(domain COLLATE "C", id) > (${after[0]} COLLATE "C", ${after[1]}::uuid)`);
  return q
    .orderBy(sql`domain COLLATE "C"`)
    .orderBy('id')
    .limit(limit + 1)
    .execute();
}

/** What `canSend` (domain/domains/sending.ts) decides on. */
export const sendingStandingOf = (row: DomainRow): SendingStanding => ({
  status: row.sending_status,
  checkedAt: row.last_checked_at?.toISOString() ?? null,
  everVerified: row.ever_verified,
});
