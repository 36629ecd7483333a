import { mailboxOwnerOf } from '../../domain/shared/mailbox-owners.ts';
import { sql } from 'kysely';
import { indexOptionOnce } from '../index-options.ts';
import { defineProjector } from '../projector.ts';
import { fileArrivals, fileImported, fileSent } from './filing.ts';
import type { ThreadsTables } from './tables.ts';

/**
 * Threads and their messages per mailbox (arrived and sent), for the threads API and for threading itself (the
 * lookups of domain/messages/threading.ts: header ids, the ids replies name, normalised subjects).
 * `search` holds the subject, participants and the latest bodies' words (filing.ts; the `simple`
 * configuration: mail comes in every language); every body's text is in `message_texts`, kept
 * beside the blobs (docs/decisions/threads.md).
 */
export const threadsProjector = defineProjector<ThreadsTables>()({
  name: 'threads',
  version: 4,
  tables: ['threads', 'thread_messages', 'labels'],
  ddl: (s) => `
    CREATE OR REPLACE AGGREGATE public.tsvector_agg(tsvector) (SFUNC = tsvector_concat, STYPE = tsvector, INITCOND = '');
    -- A thread's search (filing.ts): its messages' words, then the bodies (message_texts) of its
    -- latest messages, whose raw messages' hashes are given in filing order, up to bytes_kept
    -- stored bytes. A tsvector holds at most 1 MB, and stored bytes may be compressed, so the
    -- bodies can overflow it: then the thread keeps its words alone. Caught here, per thread,
    -- rather than by a savepoint around the update (two more statements in the transaction every
    -- 250 waits for).
    CREATE OR REPLACE FUNCTION public.thread_search_of(words text, hashes text[], bytes_kept bigint) RETURNS tsvector
      LANGUAGE plpgsql STABLE AS $fn$
    BEGIN
      RETURN to_tsvector('simple', words) || coalesce((SELECT public.tsvector_agg(r.search ORDER BY r.n) FROM (
          SELECT x.search, h.n, sum(pg_column_size(x.search)) OVER (ORDER BY h.n DESC) AS kept
          FROM unnest(hashes) WITH ORDINALITY AS h(sha256, n)
          -- One probe of the key per hash: joined, the plan cached for the session hashed the
          -- hashes and read message_texts whole while it was small, and went on reading it whole.
          CROSS JOIN LATERAL (SELECT search FROM message_texts WHERE sha256 = h.sha256 LIMIT 1) x) r
        WHERE r.kept <= bytes_kept), '');
    EXCEPTION WHEN program_limit_exceeded THEN
      RETURN to_tsvector('simple', words);
    END $fn$;
    -- The same of a filed thread, from its stored messages.
    CREATE OR REPLACE FUNCTION public.thread_search(of_thread text, words text, bytes_kept bigint) RETURNS tsvector
      LANGUAGE plpgsql STABLE AS $fn$
    BEGIN
      RETURN public.thread_search_of(words,
        ARRAY(SELECT raw_sha256 FROM thread_messages WHERE thread_id = of_thread ORDER BY position), bytes_kept);
    END $fn$;
    CREATE TABLE IF NOT EXISTS ${s}.threads (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      address text NOT NULL,
      address_id text,
      domain_id text NOT NULL,
      domain text NOT NULL,
      label text NOT NULL,
      unread boolean NOT NULL,
      has_sent boolean NOT NULL DEFAULT false,
      subject text NOT NULL,
      normalised_subject text NOT NULL,
      snippet text NOT NULL,
      participants text[] NOT NULL,
      message_count integer NOT NULL,
      last_message_at timestamptz NOT NULL,
      created_at timestamptz NOT NULL,
      search tsvector NOT NULL DEFAULT '',
      custom_labels text[] NOT NULL DEFAULT '{}'
    );
    CREATE TABLE IF NOT EXISTS ${s}.thread_messages (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      thread_id text NOT NULL,
      address text NOT NULL,
      direction text NOT NULL,
      email_id text,
      header_id text,
      in_reply_to text[] NOT NULL,
      refs text[] NOT NULL,
      subject text NOT NULL,
      from_address text,
      summary jsonb NOT NULL,
      authentication jsonb,
      spam jsonb,
      raw_sha256 text NOT NULL,
      raw_size bigint NOT NULL,
      mail_from text NOT NULL,
      received_at timestamptz NOT NULL,
      position bigint NOT NULL,
      search_words text NOT NULL
    );
    -- Threading reads thread_messages_replies for every arriving message, and a GIN index's
    -- pending list is read whole by every search: without autovacuum (CI, the bench) nothing but
    -- its 4 MB limit empties it, and at 3,000 messages the lookup took 0.25 ms there against
    -- 0.006 in the index proper. A message adds one or two keys, cheap to put in place.
    -- Here as well as where the index is made: for an index made before this.
    ${indexOptionOnce(s, 'thread_messages_replies', 'fastupdate', 'off')}
    CREATE TABLE IF NOT EXISTS ${s}.labels (
      workspace_id text NOT NULL,
      id text PRIMARY KEY,
      owner text NOT NULL,
      address text COLLATE "C" NOT NULL,
      domain text NOT NULL,
      name text NOT NULL,
      color text,
      created_at timestamptz NOT NULL,
      updated_at timestamptz NOT NULL
    );`,
  indexes: (s) => `
    CREATE INDEX IF NOT EXISTS threads_list ON ${s}.threads (workspace_id, last_message_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS threads_sent ON ${s}.threads (workspace_id, last_message_at DESC, id DESC) WHERE has_sent;
    CREATE INDEX IF NOT EXISTS threads_mailbox ON ${s}.threads (workspace_id, address, last_message_at DESC, id DESC);
    CREATE INDEX IF NOT EXISTS threads_subject ON ${s}.threads (workspace_id, address, normalised_subject);
    CREATE INDEX IF NOT EXISTS threads_search ON ${s}.threads USING gin (search);
    CREATE INDEX IF NOT EXISTS thread_messages_thread ON ${s}.thread_messages (thread_id, position);
    CREATE INDEX IF NOT EXISTS thread_messages_header ON ${s}.thread_messages (workspace_id, address, header_id);
    CREATE INDEX IF NOT EXISTS thread_messages_replies ON ${s}.thread_messages USING gin ((in_reply_to || refs))
      WITH (fastupdate = off);
    CREATE INDEX IF NOT EXISTS thread_messages_raw ON ${s}.thread_messages (raw_sha256);
    CREATE INDEX IF NOT EXISTS threads_custom_labels ON ${s}.threads USING gin (custom_labels);
    CREATE INDEX IF NOT EXISTS labels_workspace ON ${s}.labels (workspace_id, address, created_at, id);
    CREATE INDEX IF NOT EXISTS labels_owner ON ${s}.labels (owner);`,
  on: {
    MessageReceived: (db, event) => fileArrivals(db, [event]),
    MessageSent: (db, event) => fileSent(db, [event]),
    MessageImported: (db, event) => fileImported(db, [event]),
    ThreadMarked: async (db, { data: d }) => {
      await db.updateTable('threads').set({ unread: d.unread }).where('id', '=', d.threadId).execute();
    },
    ThreadMoved: async (db, { data: d }) => {
      await db.updateTable('threads').set({ label: d.to }).where('id', '=', d.threadId).execute();
    },
    // Only a label live at this point of the log goes on: one deleted in a race with the change is not revived.
    ThreadLabelsChanged: async (db, { data: d }) => {
      await sql`UPDATE threads SET custom_labels = ARRAY(
          SELECT u.l FROM unnest(custom_labels || ${d.added}::text[]) WITH ORDINALITY AS u(l, n)
          WHERE u.l <> ALL(${d.removed}::text[]) AND EXISTS (SELECT 1 FROM labels WHERE id = u.l)
          GROUP BY u.l ORDER BY min(u.n))
        WHERE id = ${d.threadId}`.execute(db);
    },
    LabelCreated: async (db, { metadata: { workspaceId }, data: d }) => {
      await sql`INSERT INTO labels (workspace_id, id, owner, address, domain, name, color, created_at, updated_at)
        VALUES (${workspaceId}, ${d.labelId}, ${d.owner}, ${d.address}, ${d.address.slice(d.address.lastIndexOf('@') + 1)},
          ${d.name}, ${d.color}, ${d.createdAt}, ${d.createdAt})
        ON CONFLICT (id) DO NOTHING`.execute(db);
    },
    LabelUpdated: async (db, { data: d }) => {
      await db
        .updateTable('labels')
        .set({ name: d.name, color: d.color, updated_at: d.updatedAt })
        .where('id', '=', d.labelId)
        .execute();
    },
    LabelDeleted: async (db, { metadata: { workspaceId }, data: d }) => {
      await db.deleteFrom('labels').where('id', '=', d.labelId).execute();
      await sql`UPDATE threads SET custom_labels = array_remove(custom_labels, ${d.labelId})
        WHERE workspace_id = ${workspaceId} AND custom_labels @> ARRAY[${d.labelId}]::text[]`.execute(db);
    },
    // A mailbox that goes takes its labels (their ids are never used again), off its threads too.
    AddressDeleted: async (db, { metadata: { workspaceId }, data: d }) => {
      await db.deleteFrom('labels').where('owner', '=', d.addressId).execute();
      await sql`UPDATE threads SET custom_labels = '{}'
        WHERE workspace_id = ${workspaceId} AND address_id = ${d.addressId} AND custom_labels <> '{}'`.execute(db);
    },
    DomainDeleted: async (db, { metadata: { workspaceId }, data: d }) => {
      await db
        .deleteFrom('labels')
        .where('owner', '=', mailboxOwnerOf({ addressId: null, domainId: d.domainId }))
        .execute();
      await sql`UPDATE threads SET custom_labels = '{}'
        WHERE workspace_id = ${workspaceId} AND address_id IS NULL AND domain_id = ${d.domainId}
          AND custom_labels <> '{}'`.execute(db);
    },
    ThreadDeleted: async (db, { data: d }) => {
      await db.deleteFrom('thread_messages').where('thread_id', '=', d.threadId).execute();
      await db.deleteFrom('threads').where('id', '=', d.threadId).execute();
    },
  },
  // Messages in a row go in together (filing.ts).
  onRun: { MessageReceived: fileArrivals, MessageSent: fileSent, MessageImported: fileImported },
});
