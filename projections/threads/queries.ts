import { sql, type Kysely, type Selectable } from 'kysely';
import type { SubjectCandidate, ThreadingKnowledge } from '../../domain/messages/threading.ts';
import type { SettableLabel } from '../../domain/threads/events.ts';
import { type Reach, withinReach } from '../addresses/queries.ts';
import type { ReadModels } from '../tables.ts';
import type { ThreadsTables } from './tables.ts';

type Db = Kysely<ReadModels>;

export type ThreadRow = Omit<Selectable<ThreadsTables['threads']>, never>;
export type ThreadMessageRow = Omit<Selectable<ThreadsTables['thread_messages']>, 'search_words'>;

const THREAD_COLUMNS = sql.raw(`t.workspace_id, t.id, t.address, t.address_id, t.domain_id, t.domain, t.label, t.unread,
  t.has_sent, t.subject, t.normalised_subject, t.snippet, t.participants, t.message_count, t.last_message_at, t.created_at,
  t.custom_labels`);

/** A narrowed credential's lists: the mailboxes of the addresses it holds and of the domains it holds whole. */
export async function findThread(
  db: Db,
  workspaceId: string,
  reach: Reach | null,
  id: string,
): Promise<ThreadRow | undefined> {
  const { rows } = await sql<ThreadRow>`SELECT ${THREAD_COLUMNS} FROM threads t
    WHERE t.workspace_id = ${workspaceId} AND t.id = ${id} ${withinReach(reach, 't.address', 't.domain')}`.execute(db);
  return rows[0];
}

export interface ThreadFilter {
  /** One mailbox (an address or `*@<domain>`), lower-case. */
  address?: string;
  label?: SettableLabel;
  /** Only threads with a message the mailbox sent (the `sent` label). */
  sent?: boolean;
  /** A custom label's id (`lbl_`). */
  customLabel?: string;
  unread?: boolean;
  /** Words (web search syntax: quotes, `or`, `-`) over subject, participants and body text. */
  q?: string;
  reach: Reach | null;
}

/**
 * Threads tested in order for a search before the matches are looked up by index instead: a
 * word in one thread of twenty fills a page from the first few hundred threads (a walk that
 * stops early); a rarer one is found through the indexes (few candidates to sort). Why not the
 * indexes alone: a common word has tens of thousands of matches to sort for a page of 25.
 */
const SEARCH_WINDOW = 500;

/** Latest activity first, after the cursor's (lastMessageAt, id). */
export async function listThreads(
  db: Db,
  workspaceId: string,
  filter: ThreadFilter,
  limit: number,
  after: [string, string] | null,
): Promise<ThreadRow[]> {
  const filters = sql`${filter.address === undefined ? sql`` : sql`AND t.address = ${filter.address}`}
      ${filter.label === undefined ? sql`` : sql`AND t.label = ${filter.label}`}
      ${filter.sent ? sql`AND t.has_sent` : sql``}
      ${filter.customLabel === undefined ? sql`` : sql`AND t.custom_labels @> ARRAY[${filter.customLabel}]::text[]`}
      ${filter.unread === undefined ? sql`` : sql`AND t.unread = ${filter.unread}`}
      ${withinReach(filter.reach, 't.address', 't.domain')}
      ${after === null ? sql`` : sql`AND (t.last_message_at, t.id) < (${after[0]}::timestamptz, ${after[1]})`}`;
  const order = sql`ORDER BY t.last_message_at DESC, t.id DESC`;
  if (filter.q === undefined) {
    const { rows } = await sql<ThreadRow>`SELECT ${THREAD_COLUMNS} FROM threads t
      WHERE t.workspace_id = ${workspaceId} ${filters} ${order} LIMIT ${limit + 1}`.execute(db);
    return rows;
  }
  const query = sql`websearch_to_tsquery('simple', ${filter.q})`;
  const window = sql`SELECT t.* FROM threads t WHERE t.workspace_id = ${workspaceId} ${filters} ${order}
    LIMIT ${SEARCH_WINDOW}`;
  // The window walked in order, stopping at the page's last match: a thread's `search` holds its
  // subject, participants and latest bodies (filing.ts), so one test per thread.
  const { rows: found } = await sql<ThreadRow>`SELECT ${THREAD_COLUMNS} FROM (${window}) t
    WHERE t.search @@ ${query} ${order} LIMIT ${limit + 1}`.execute(db);
  if (found.length > limit) return found;
  const { rows: held } = await sql<{ n: string }>`SELECT count(*) AS n FROM (
      SELECT 1 FROM threads t WHERE t.workspace_id = ${workspaceId} ${filters} LIMIT ${SEARCH_WINDOW}) w`.execute(db);
  if (Number(held[0]!.n) < SEARCH_WINDOW) return found;
  // Past the window, the matches come from the indexes: the threads' words, and every stored
  // body's (message_texts, by the blob's hash), older bodies than a thread's `search` keeps included.
  // The threads' own matches are cut to a page in order first, so a participant of a thousand
  // threads costs one read of each match, not two. The bodies' matches are gathered first
  // (MATERIALIZED): cut the same way, the planner walked every thread in order looking for them.
  const { rows } = await sql<ThreadRow>`WITH bodies AS MATERIALIZED (
      SELECT m.thread_id FROM message_texts x JOIN thread_messages m ON m.raw_sha256 = x.sha256
      WHERE x.search @@ ${query} AND m.workspace_id = ${workspaceId})
    SELECT ${THREAD_COLUMNS} FROM threads t
    WHERE t.workspace_id = ${workspaceId} ${filters} AND t.id IN (
      (SELECT t.id FROM threads t WHERE t.workspace_id = ${workspaceId} AND t.search @@ ${query} ${filters}
        ${order} LIMIT ${limit + 1})
      UNION SELECT thread_id FROM bodies)
    ${order} LIMIT ${limit + 1}`.execute(db);
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
      'direction',
      'email_id',
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

type ThreadingRow = {
  by_id: { header_id: string; thread_id: string }[];
  referenced_by: string[];
  by_subject: { id: string; last_message_at: string; participants: string[] }[];
};

/**
 * The columns threading reads (`ThreadingRow`), as subqueries of one SELECT. Each is written so
 * that its index is the only way in, whatever the statistics: a table not yet analyzed (a new
 * database, or one where autovacuum has not come round) has none, and the planner, taking
 * (workspace, mailbox) for one row, walked the mailbox's every message and thread instead, the
 * lookup growing with the mailbox until the next ANALYZE (0.1 to 1.3 ms over the first 1,000
 * messages, docs/benchmarks.md). So the header ids are looked up one equality each (all three
 * columns of thread_messages_header, where `= ANY` left the ids to a filter); the messages that
 * name this one are found through the replies' GIN index alone (OFFSET 0 keeps the mailbox's
 * condition out of that scan); the subject's threads by threads_subject, ordered after (an ORDER
 * BY inside chose threads_mailbox for its order). The header ids come as a JSON array: unnested
 * from a text[] they counted 10 rows in the prepared statement's generic plan and their real
 * number in a custom one, so PostgreSQL planned the lookup anew on every run (0.21–0.25 ms of
 * planning to 0.09 of execution); a JSON array counts 100 in both, and the generic plan is kept.
 */
const threadingColumns = (
  workspaceId: string,
  mailbox: string,
  keys: { messageId: string | null; ids: string[]; subject: string | null },
) => sql`(SELECT coalesce(json_agg(r), '[]') FROM (
        SELECT k.id AS header_id, m.thread_id FROM jsonb_array_elements_text(${JSON.stringify(keys.ids)}::jsonb) AS k(id)
        CROSS JOIN LATERAL (SELECT thread_id FROM thread_messages
          WHERE workspace_id = ${workspaceId} AND address = ${mailbox} AND header_id = k.id
          ORDER BY position LIMIT 1) m) r) AS by_id,
      (SELECT coalesce(json_agg(r.thread_id ORDER BY r.received_at, r.position), '[]') FROM (
        SELECT thread_id, received_at, position FROM (
          SELECT workspace_id, address, thread_id, received_at, position FROM thread_messages
          WHERE ${keys.messageId}::text IS NOT NULL AND (in_reply_to || refs) @> ARRAY[${keys.messageId}::text]
          OFFSET 0) m
        WHERE workspace_id = ${workspaceId} AND address = ${mailbox}
        ORDER BY received_at, position LIMIT 10) r) AS referenced_by,
      (SELECT coalesce(json_agg(r ORDER BY r.last_message_at DESC), '[]') FROM (
        SELECT id, last_message_at, participants FROM (
          SELECT id, last_message_at, participants FROM threads
          WHERE workspace_id = ${workspaceId} AND address = ${mailbox} AND normalised_subject = ${keys.subject}::text
          OFFSET 0) t
        ORDER BY last_message_at DESC LIMIT 20) r) AS by_subject`;

const knowledgeOf = ({ by_id, referenced_by, by_subject }: ThreadingRow): ThreadingKnowledge => ({
  threadOfMessageId: new Map(by_id.map((r) => [r.header_id, r.thread_id])),
  referencedBy: referenced_by,
  bySubject: by_subject.map(
    (r): SubjectCandidate => ({
      threadId: r.id,
      lastMessageAt: new Date(r.last_message_at).toISOString(),
      participants: r.participants,
    }),
  ),
});

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
  // One statement, not three: it runs for every arriving message, before its 250.
  const { rows } = await sql<ThreadingRow>`SELECT ${threadingColumns(workspaceId, mailbox, keys)}`.execute(db);
  return knowledgeOf(rows[0]!);
}

/**
 * What filing an arriving message reads, in one statement where it took three: threading's
 * knowledge, the sent message (of the workspace) whose Message-ID is the nearest of `replyIds`,
 * and whether the workspace's contact book holds `sender` (its `lastSeenAt` then moves).
 */
export async function arrivalKnowledge(
  db: Db,
  workspaceId: string,
  mailbox: string,
  keys: { messageId: string | null; ids: string[]; subject: string | null },
  replyIds: string[],
  sender: string | null,
): Promise<{ threading: ThreadingKnowledge; replyTo: { emailId: string } | undefined; fromContact: boolean }> {
  const { rows } = await sql<ThreadingRow & { sent: { id: string; message_id: string }[]; contact: boolean }>`SELECT
      ${threadingColumns(workspaceId, mailbox, keys)},
      (SELECT coalesce(json_agg(json_build_object('id', id, 'message_id', message_id)), '[]') FROM emails
        WHERE workspace_id = ${workspaceId} AND message_id = ANY(${replyIds}::text[])) AS sent,
      EXISTS (SELECT 1 FROM contacts WHERE workspace_id = ${workspaceId} AND email = ${sender}::text) AS contact`.execute(
    db,
  );
  const row = rows[0]!;
  const nearest = replyIds.map((id) => row.sent.find((r) => r.message_id === id)).find((r) => r !== undefined);
  return {
    threading: knowledgeOf(row),
    replyTo: nearest && { emailId: nearest.id },
    fromContact: row.contact,
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
  // One round trip: it runs at every RCPT.
  const { rows } = await sql<{
    workspace_id: string;
    id: string;
    domain: string;
    catch_all: boolean;
    receiving_verified_at: Date | null;
    address_id: string | null;
    address: string | null;
    enabled: boolean | null;
  }>`SELECT d.workspace_id, d.id, d.domain, d.catch_all, d.receiving_verified_at,
      a.id AS address_id, a.address, a.enabled
    FROM domains d LEFT JOIN addresses a
      ON a.workspace_id = d.workspace_id AND a.address = ${address} AND a.registered
    WHERE d.domain = ${address.slice(at + 1)}
    LIMIT 1`.execute(db);
  const domain = rows[0];
  if (!domain || domain.receiving_verified_at === null) return undefined;
  if (domain.address !== null && domain.enabled)
    return {
      workspaceId: domain.workspace_id,
      addressId: domain.address_id,
      address: domain.address,
      domainId: domain.id,
      domain: domain.domain,
    };
  // A disabled address takes no mail, not even through the catch-all.
  if (domain.address !== null || !domain.catch_all) return undefined;
  return {
    workspaceId: domain.workspace_id,
    addressId: null,
    address: `*@${domain.domain}`,
    domainId: domain.id,
    domain: domain.domain,
  };
}

/** The thread a filed message (`mes_`) is in. */
export async function threadOfMessage(db: Db, workspaceId: string, messageId: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('thread_messages')
    .select('thread_id')
    .where('workspace_id', '=', workspaceId)
    .where('id', '=', messageId)
    .executeTakeFirst();
  return row?.thread_id;
}
