import { sql, type Kysely } from 'kysely';
import type { ContactSource } from '../../domain/contacts/events.ts';

export interface ContactRow {
  workspace_id: string;
  id: string;
  email: string;
  name: string | null;
  notes: string | null;
  attributes: Record<string, string>;
  source: ContactSource;
  last_seen_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AudienceRow {
  workspace_id: string;
  id: string;
  name: string;
  description: string | null;
  show_on_preferences: boolean;
  builtin: 'default' | null;
  member_count: number;
  created_at: Date;
  updated_at: Date;
}

export async function findContactByEmail(db: Kysely<any>, workspaceId: string, email: string): Promise<ContactRow | undefined> {
  return (await db
    .selectFrom('contacts')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst()) as ContactRow | undefined;
}

export async function findContactById(db: Kysely<any>, workspaceId: string, id: string): Promise<ContactRow | undefined> {
  return (await db.selectFrom('contacts').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()) as
    | ContactRow
    | undefined;
}

/** The audiences a contact is in now. */
export async function contactAudienceIds(db: Kysely<any>, workspaceId: string, contactId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('audience_members')
    .select('audience_id')
    .where('workspace_id', '=', workspaceId)
    .where('contact_id', '=', contactId)
    .where('left_at', 'is', null)
    .orderBy('joined_at')
    .orderBy('audience_id')
    .execute();
  return rows.map((r) => r.audience_id as string);
}

export interface ContactFilter {
  /** Substring of the address or name, any case; `%` and `_` match themselves. */
  q?: string;
  source?: ContactSource;
}

/** The sort key: `lastSeenAt` with never-seen as -infinity, so they come last and the keyset stays one row comparison. */
const seen = sql`coalesce(last_seen_at, '-infinity'::timestamptz)`;

/**
 * Most recently seen first, never-seen last, then id descending. The cursor is the last row's
 * (lastSeenAt or null, id); the row comparison on the coalesced key stays an index bound.
 */
export async function listContacts(
  db: Kysely<any>,
  workspaceId: string,
  filter: ContactFilter,
  limit: number,
  after: [string | null, string] | null,
): Promise<ContactRow[]> {
  let q = db.selectFrom('contacts').selectAll().where('workspace_id', '=', workspaceId);
  if (filter.source) q = q.where('source', '=', filter.source);
  if (filter.q) {
    const pattern = `%${filter.q.replace(/[\\%_]/g, '\\$&')}%`;
    q = q.where((eb) => eb.or([eb('email', 'ilike', pattern), eb('name', 'ilike', pattern)]));
  }
  if (after) q = q.where(sql<boolean>`(${seen}, id) < (${after[0] ?? '-infinity'}::timestamptz, ${after[1]})`);
  return (await q.orderBy(seen, 'desc').orderBy('id', 'desc').limit(limit + 1).execute()) as ContactRow[];
}

export async function findAudience(db: Kysely<any>, workspaceId: string, id: string): Promise<AudienceRow | undefined> {
  return (await db.selectFrom('audiences').selectAll().where('workspace_id', '=', workspaceId).where('id', '=', id).executeTakeFirst()) as
    | AudienceRow
    | undefined;
}

/** Default audience first, then newest first (created_at, id descending). */
export async function listAudiences(db: Kysely<any>, workspaceId: string, limit: number, after: AudienceRow | null): Promise<AudienceRow[]> {
  let q = db.selectFrom('audiences').selectAll().where('workspace_id', '=', workspaceId);
  if (after) {
    q = q.where('builtin', 'is', null);
    if (after.builtin === null) q = q.where((eb) => eb(eb.refTuple('created_at', 'id'), '<', eb.tuple(after.created_at as any, after.id)));
  }
  return (await q
    .orderBy(sql`builtin IS NULL`)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1)
    .execute()) as AudienceRow[];
}

export async function allAudiences(db: Kysely<any>, workspaceId: string): Promise<AudienceRow[]> {
  return (await db
    .selectFrom('audiences')
    .selectAll()
    .where('workspace_id', '=', workspaceId)
    .orderBy(sql`builtin IS NULL`)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .execute()) as AudienceRow[];
}
