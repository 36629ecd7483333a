import { sql, type Kysely } from 'kysely';
import { type MailAddress, type MessageSummary, participantsOf, peopleOf } from '../../domain/messages/summary.ts';
import type { Mailbox } from '../../domain/threads/events.ts';
import type { Projected } from '../projector.ts';
import type { ThreadsTables } from './tables.ts';

/** A message as the read model files it, whether it arrived or the mailbox sent it. */
interface Filed {
  workspaceId: string;
  position: number;
  threadId: string;
  messageId: string;
  mailbox: Mailbox;
  direction: 'received' | 'sent';
  emailId: string | null;
  summary: MessageSummary;
  raw: { sha256: string; size: number };
  mailFrom: string;
  authentication: unknown;
  spam: unknown;
  normalisedSubject: string;
  label: string;
  /** Whether the message leaves its thread unread (arrivals do, sends never, imports as the import said). */
  unread: boolean;
  at: string;
}

const arrival = ({ metadata, position, data: d }: Projected<'MessageReceived'>): Filed => ({
  workspaceId: metadata.workspaceId,
  position,
  threadId: d.threadId,
  messageId: d.messageId,
  mailbox: d.mailbox,
  direction: 'received',
  emailId: null,
  summary: d.summary,
  raw: d.raw,
  mailFrom: d.mailFrom,
  authentication: d.authentication,
  spam: d.spam,
  normalisedSubject: d.normalisedSubject,
  label: d.label,
  unread: true,
  at: d.receivedAt,
});

const sending = ({ metadata, position, data: d }: Projected<'MessageSent'>): Filed => ({
  workspaceId: metadata.workspaceId,
  position,
  threadId: d.threadId,
  messageId: d.messageId,
  mailbox: d.mailbox,
  direction: 'sent',
  emailId: d.emailId,
  summary: d.summary,
  raw: d.raw,
  mailFrom: d.mailFrom,
  authentication: null,
  spam: null,
  normalisedSubject: d.normalisedSubject,
  label: d.label,
  unread: false,
  at: d.sentAt,
});

const importing = ({ metadata, position, data: d }: Projected<'MessageImported'>): Filed => ({
  workspaceId: metadata.workspaceId,
  position,
  threadId: d.threadId,
  messageId: d.messageId,
  mailbox: d.mailbox,
  direction: d.direction,
  emailId: null,
  summary: d.summary,
  raw: d.raw,
  mailFrom: '',
  authentication: null,
  spam: null,
  normalisedSubject: d.normalisedSubject,
  label: d.label,
  unread: d.unread,
  at: d.at,
});

export const fileArrivals = (db: Kysely<ThreadsTables>, events: Projected<'MessageReceived'>[]) =>
  fileMessages(db, events.map(arrival));

export const fileSent = (db: Kysely<ThreadsTables>, events: Projected<'MessageSent'>[]) =>
  fileMessages(db, events.map(sending));

export const fileImported = (db: Kysely<ThreadsTables>, events: Projected<'MessageImported'>[]) =>
  fileMessages(db, events.map(importing));

/**
 * The bodies' words a thread's `search` holds: its latest messages' (message_texts), up to this
 * many stored bytes. Older bodies are still found, through message_texts itself (queries.ts).
 */
const BODY_BYTES = 256 * 1024;

/** Words a participant is found by: name, address, and the address's two halves. */
const participantWords = (people: (MailAddress | null)[]) =>
  people
    .filter((p): p is MailAddress => p !== null)
    .map((p) => `${p.name ?? ''} ${p.address} ${p.address.replace('@', ' ')}`)
    .join(' ');

/**
 * Files a run of messages in two statements at most whatever its length, leaving the tables as
 * filing them one by one would: the messages with the threads they open, then each other thread
 * touched once. Why: the projector is one sequential pipeline that every arriving message waits
 * on before its 250; three statements per message made it the ceiling of inbound mail
 * (docs/benchmarks.md).
 *
 * Per thread, in log order: the last message's label wins; an arrival makes it unread, a send
 * leaves read state as it was (a thread a send opens is read), an import as the import said; the snippet is the latest
 * message's (the later in the log on equal times) when it is not older than the thread's last
 * message; participants are the union; count and search words are recounted from the stored
 * messages, so a replay changes nothing. `search` holds the subject and participants of every
 * message and the body words of the latest ones, read from message_texts, which the receiving
 * slice and the sent-mail worker write before they file (so the threads read model is rebuilt
 * from the events and message_texts).
 *
 * A thread the run opens has all its messages in the run, so it is inserted as it ends up, from
 * the run alone: most arriving mail opens a thread, and inserting it bare to update it at once
 * wrote each of its rows twice (every index of threads, its search's GIN among them) in a
 * statement more. Only the threads that were there before are updated, counted from the table.
 */
async function fileMessages(db: Kysely<ThreadsTables>, filed: Filed[]): Promise<void> {
  if (filed.length === 0) return;
  const messages = filed.map((m) => {
    const s = m.summary;
    return {
      workspace_id: m.workspaceId,
      id: m.messageId,
      thread_id: m.threadId,
      address: m.mailbox.address,
      direction: m.direction,
      email_id: m.emailId,
      header_id: s.messageId,
      in_reply_to: s.inReplyTo,
      refs: s.references,
      subject: s.subject,
      from_address: s.from?.address.toLowerCase() ?? null,
      summary: s,
      authentication: m.authentication,
      spam: m.spam,
      raw_sha256: m.raw.sha256,
      raw_size: m.raw.size,
      mail_from: m.mailFrom,
      received_at: m.at,
      position: m.position,
      search_words: `${s.subject} ${participantWords(peopleOf(s))}`,
    };
  });
  const threads = new Map<
    string,
    {
      first: Filed;
      label: string;
      latest: Filed;
      lastAt: number;
      participants: Set<string>;
      unread: boolean;
      /** The run's messages of the thread, once each, in log order (a run's order). */
      messages: Map<string, (typeof messages)[number]>;
    }
  >();
  for (const [i, m] of filed.entries()) {
    const at = Date.parse(m.at);
    const t = threads.get(m.threadId);
    if (!t) {
      threads.set(m.threadId, {
        first: m,
        label: m.label,
        latest: m,
        lastAt: at,
        participants: new Set(participantsOf(m.summary)),
        unread: m.unread,
        messages: new Map([[m.messageId, messages[i]!]]),
      });
      continue;
    }
    t.label = m.label;
    t.unread ||= m.unread;
    if (at >= t.lastAt) {
      t.latest = m;
      t.lastAt = at;
    }
    for (const p of participantsOf(m.summary)) t.participants.add(p);
    if (!t.messages.has(m.messageId)) t.messages.set(m.messageId, messages[i]!);
  }
  const opened = [...threads.values()].map(({ first: m, latest, label, unread, participants, messages: own }) => ({
    workspace_id: m.workspaceId,
    id: m.threadId,
    address: m.mailbox.address,
    address_id: m.mailbox.addressId,
    domain_id: m.mailbox.domainId,
    domain: m.mailbox.domain,
    label,
    unread,
    sent: [...own.values()].some((r) => r.direction === 'sent'),
    subject: m.summary.subject,
    normalised_subject: m.normalisedSubject,
    snippet: latest.summary.snippet,
    participants: [...participants],
    message_count: own.size,
    at: latest.at,
    created_at: m.at,
    words: [...own.values()].map((r) => r.search_words).join(' '),
    hashes: [...own.values()].map((r) => r.raw_sha256),
  }));
  // The messages, and the threads they open, in one statement: neither insert reads the other's
  // table. A thread already there is left to the update below; it is found by the conflict alone
  // (the unique index), as a NOT EXISTS beside it was planned as an anti-join over every thread.
  const { rows: inserted } = await sql<{ id: string }>`WITH filed AS (INSERT INTO thread_messages (workspace_id, id,
      thread_id, address, direction, email_id, header_id, in_reply_to, refs, subject, from_address, summary,
      authentication, spam, raw_sha256, raw_size, mail_from, received_at, position, search_words)
    SELECT workspace_id, id, thread_id, address, direction, email_id, header_id, in_reply_to, refs, subject,
      from_address, summary, authentication, spam, raw_sha256, raw_size, mail_from, received_at, position, search_words
    FROM jsonb_to_recordset(${JSON.stringify(messages)}::jsonb) AS r(workspace_id text, id text, thread_id text,
      address text, direction text, email_id text, header_id text, in_reply_to text[], refs text[], subject text,
      from_address text, summary jsonb, authentication jsonb, spam jsonb, raw_sha256 text, raw_size bigint,
      mail_from text, received_at timestamptz, position bigint, search_words text)
    ORDER BY position
    ON CONFLICT (id) DO NOTHING)
    INSERT INTO threads (workspace_id, id, address, address_id, domain_id, domain, label, unread, has_sent,
      subject, normalised_subject, snippet, participants, message_count, last_message_at, created_at, search)
    SELECT workspace_id, id, address, address_id, domain_id, domain, label, unread, sent, subject, normalised_subject,
      snippet, ARRAY(SELECT DISTINCT p FROM unnest(participants) p ORDER BY p), message_count, at, created_at,
      public.thread_search_of(words, hashes, ${BODY_BYTES})
    FROM jsonb_to_recordset(${JSON.stringify(opened)}::jsonb) AS r(workspace_id text, id text, address text,
      address_id text, domain_id text, domain text, label text, unread boolean, sent boolean, subject text,
      normalised_subject text, snippet text, participants text[], message_count int, at timestamptz,
      created_at timestamptz, words text, hashes text[])
    ON CONFLICT (id) DO NOTHING
    RETURNING id`.execute(db);

  const fresh = new Set(inserted.map((r) => r.id));
  const touched = [...threads.entries()]
    .filter(([id]) => !fresh.has(id))
    .map(([id, t]) => ({
      id,
      label: t.label,
      unread: t.unread,
      snippet: t.latest.summary.snippet,
      at: t.latest.at,
      participants: [...t.participants],
    }));
  if (touched.length === 0) return;
  await sql`UPDATE threads t SET label = u.label, unread = t.unread OR u.unread,
      has_sent = c.sent,
      snippet = CASE WHEN u.at >= t.last_message_at THEN u.snippet ELSE t.snippet END,
      last_message_at = GREATEST(t.last_message_at, u.at),
      participants = ARRAY(SELECT DISTINCT p FROM unnest(t.participants || u.participants) p ORDER BY p),
      message_count = c.n,
      search = public.thread_search(u.id, c.words, ${BODY_BYTES})
    FROM jsonb_to_recordset(${JSON.stringify(touched)}::jsonb) AS u(id text, label text, unread boolean,
      snippet text, at timestamptz, participants text[])
    CROSS JOIN LATERAL (SELECT count(*)::int AS n, bool_or(direction = 'sent') AS sent,
      string_agg(search_words, ' ' ORDER BY position) AS words
      FROM thread_messages WHERE thread_id = u.id) c
    WHERE t.id = u.id`.execute(db);
}
