import { sql, type Kysely, type Selectable } from 'kysely';
import type { SubjectCandidate, ThreadingKnowledge } from '../../domain/messages/threading.ts';
import type { SettableLabel } from '../../domain/threads/events.ts';
import type { Reach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { ThreadsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type ThreadRow = Omit<Selectable<ThreadsTables['threads']>, never>;
export type ThreadMessageRow = Omit<Selectable<ThreadsTables['thread_messages']>, 'search_words'>;

const THREAD_COLUMNS = sql.raw(`t.workspace_id, t.id, t.address, t.address_id, t.domain_id, t.domain, t.label, t.unread,
  t.subject, t.normalised_subject, t.snippet, t.participants, t.message_count, t.last_message_at, t.created_at,
  t.custom_labels`);

/** A narrowed credential's lists: the mailboxes of the addresses it holds and of the domains it holds whole. */
const within = (reach: Reach | null) =>
  reach === null
    ? sql``
    : sql`AND (t.address = ANY(${reach.addresses}::text[]) OR t.domain = ANY(${reach.domains}::text[]))`;

export async function findThread(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<ThreadRow | undefined> {
  const { rows } = await sql<ThreadRow>`SELECT ${THREAD_COLUMNS} FROM threads t
    WHERE t.workspace_id = ${workspaceId} AND t.id = ${id} ${within(reach)}`.execute(db);
  return rows[0];
}

export interface ThreadFilter {
  /** One mailbox (an address or `*@<domain>`), lower-case. */
  address?: string;
  label?: SettableLabel;
  /** A custom label's id (`lbl_`). */
  customLabel?: string;
  unread?: boolean;
  /** Words (web search syntax: quotes, `or`, `-`) over subject, participants and body text. */
  q?: string;
  reach: Reach | null;
}

/** Latest activity first, after the cursor's (lastMessageAt, id). */
export async function listThreads(
  db: Db,
  workspaceId: string,
  filter: ThreadFilter,
  limit: number,
  after: [string, string] | null,
): Promise<ThreadRow[]> {
  const query = sql`websearch_to_tsquery('simple', ${filter.q ?? ''})`;
  // The body's words are per stored message (message_texts, by the blob's hash).
  const search =
    filter.q === undefined
      ? sql``
      : sql`AND (t.search @@ ${query} OR EXISTS (SELECT 1 FROM thread_messages m JOIN message_texts x ON x.sha256 = m.raw_sha256
          WHERE m.thread_id = t.id AND x.search @@ ${query}))`;
  const { rows } = await sql<ThreadRow>`SELECT ${THREAD_COLUMNS} FROM threads t
    WHERE t.workspace_id = ${workspaceId}
      ${filter.address === undefined ? sql`` : sql`AND t.address = ${filter.address}`}
      ${filter.label === undefined ? sql`` : sql`AND t.label = ${filter.label}`}
      ${filter.customLabel === undefined ? sql`` : sql`AND t.custom_labels @> ARRAY[${filter.customLabel}]::text[]`}
      ${filter.unread === undefined ? sql`` : sql`AND t.unread = ${filter.unread}`}
      ${search} ${within(filter.reach)}
      ${after === null ? sql`` : sql`AND (t.last_message_at, t.id) < (${after[0]}::timestamptz, ${after[1]})`}
    ORDER BY t.last_message_at DESC, t.id DESC LIMIT ${limit + 1}`.execute(db);
  return rows;
}

/** A thread's messages in the order they were filed. */
export async function messagesOf(db: Db, threadId: string): Promise<ThreadMessageRow[]> {
  return db
    .selectFrom('thread_messages')
    .select([
      'workspace_id',
      'id',
      'thread_id',
      'address',
      'header_id',
      'in_reply_to',
      'refs',
      'subject',
      'from_address',
      'summary',
      'authentication',
      'spam',
      'raw_sha256',
      'raw_size',
      'mail_from',
      'received_at',
      'position',
    ])
    .where('thread_id', '=', threadId)
    .orderBy('position')
    .execute();
}

/**
 * What threading needs to know about one mailbox (domain/messages/threading.ts `threadingKeys`):
 * the threads of the header ids named, the threads of messages that name this one, and the
 * threads with the same normalised subject.
 */
export async function threadingKnowledge(
  db: Db,
  workspaceId: string,
  mailbox: string,
  keys: { messageId: string | null; ids: string[]; subject: string | null },
): Promise<ThreadingKnowledge> {
  const [byId, referencedBy, bySubject] = await Promise.all([
    keys.ids.length === 0
      ? []
      : sql<{
          header_id: string;
          thread_id: string;
        }>`SELECT DISTINCT ON (header_id) header_id, thread_id FROM thread_messages
          WHERE workspace_id = ${workspaceId} AND address = ${mailbox} AND header_id = ANY(${keys.ids}::text[])
          ORDER BY header_id, position`
          .execute(db)
          .then((r) => r.rows),
    keys.messageId === null
      ? []
      : sql<{ thread_id: string }>`SELECT thread_id FROM thread_messages
          WHERE workspace_id = ${workspaceId} AND address = ${mailbox} AND (in_reply_to || refs) @> ARRAY[${keys.messageId}]::text[]
          ORDER BY received_at, position LIMIT 10`
          .execute(db)
          .then((r) => r.rows),
    keys.subject === null
      ? []
      : sql<{
          id: string;
          last_message_at: Date;
          participants: string[];
        }>`SELECT id, last_message_at, participants FROM threads
          WHERE workspace_id = ${workspaceId} AND address = ${mailbox} AND normalised_subject = ${keys.subject}
          ORDER BY last_message_at DESC LIMIT 20`
          .execute(db)
          .then((r) => r.rows),
  ]);
  return {
    threadOfMessageId: new Map(byId.map((r) => [r.header_id, r.thread_id])),
    referencedBy: referencedBy.map((r) => r.thread_id),
    bySubject: bySubject.map(
      (r): SubjectCandidate => ({
        threadId: r.id,
        lastMessageAt: r.last_message_at.toISOString(),
        participants: r.participants,
      }),
    ),
  };
}

/** Where mail for an address is filed: the enabled address of a verified domain, or the domain's catch-all. */
export async function mailboxFor(
  db: Db,
  address: string,
): Promise<
  { workspaceId: string; addressId: string | null; address: string; domainId: string; domain: string } | undefined
> {
  const at = address.lastIndexOf('@');
  if (at < 1) return undefined;
  const domainName = address.slice(at + 1);
  const domain = await db
    .selectFrom('domains')
    .select(['workspace_id', 'id', 'domain', 'catch_all', 'receiving_verified_at'])
    .where('domain', '=', domainName)
    .executeTakeFirst();
  if (!domain) return undefined;
  if (domain.receiving_verified_at === null) return undefined;
  const row = await db
    .selectFrom('addresses')
    .select(['id', 'address', 'enabled'])
    .where('workspace_id', '=', domain.workspace_id)
    .where('address', '=', address)
    .where('registered', '=', true)
    .executeTakeFirst();
  if (row?.enabled)
    return {
      workspaceId: domain.workspace_id,
      addressId: row.id,
      address: row.address,
      domainId: domain.id,
      domain: domain.domain,
    };
  // A disabled address takes no mail, not even through the catch-all.
  if (row || !domain.catch_all) return undefined;
  return {
    workspaceId: domain.workspace_id,
    addressId: null,
    address: `*@${domain.domain}`,
    domainId: domain.id,
    domain: domain.domain,
  };
}

/** The sent message (of the workspace) whose Message-ID is one of `ids`, the nearest first. */
export async function sentEmailNamed(
  db: Db,
  workspaceId: string,
  ids: string[],
): Promise<{ emailId: string } | undefined> {
  if (ids.length === 0) return undefined;
  const rows = await db
    .selectFrom('emails')
    .select(['id', 'message_id'])
    .where('workspace_id', '=', workspaceId)
    .where('message_id', 'in', ids)
    .execute();
  for (const id of ids) {
    const row = rows.find((r) => r.message_id === id);
    if (row) return { emailId: row.id };
  }
  return undefined;
}

/** Whether the workspace's contact book holds the address (its `lastSeenAt` then moves). */
export async function isContact(db: Db, workspaceId: string, email: string): Promise<boolean> {
  const row = await db
    .selectFrom('contacts')
    .select('id')
    .where('workspace_id', '=', workspaceId)
    .where('email', '=', email)
    .executeTakeFirst();
  return row !== undefined;
}
