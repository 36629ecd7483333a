import { sql, type Kysely } from 'kysely';
import type { MailAddress } from '../../domain/messages/summary.ts';
import type { Projected } from '../projector.ts';
import type { ThreadsTables } from './tables.ts';

type Arrival = Projected<'MessageReceived'>;

/** Words a participant is found by: name, address, and the address's two halves. */
const participantWords = (people: (MailAddress | null)[]) =>
  people
    .filter((p): p is MailAddress => p !== null)
    .map((p) => `${p.name ?? ''} ${p.address} ${p.address.replace('@', ' ')}`)
    .join(' ');

const participantsOf = (e: Arrival) => {
  const s = e.data.summary;
  return [...new Set([s.from, ...s.to, ...s.cc].filter((p) => p !== null).map((p) => p.address.toLowerCase()))];
};

/**
 * Files a run of arrivals in three statements whatever its length, leaving the tables as filing
 * them one by one would: the messages, the threads they open (the first arrival of each), then
 * each thread touched once. Why: the projector is one sequential pipeline that every arriving
 * message waits on before its 250; three statements per message made it the ceiling of inbound
 * mail (docs/benchmarks.md).
 *
 * Per thread, in log order: the last arrival's label wins; the snippet is the latest arrival's
 * (the later in the log on equal times) when it is not older than the thread's last message;
 * participants are the union; count and search words are recounted from the stored messages, so
 * a replay changes nothing.
 */
export async function fileArrivals(db: Kysely<ThreadsTables>, arrivals: Arrival[]): Promise<void> {
  if (arrivals.length === 0) return;
  const messages = arrivals.map((e) => {
    const { data: d } = e;
    const s = d.summary;
    return {
      workspace_id: e.metadata.workspaceId,
      id: d.messageId,
      thread_id: d.threadId,
      address: d.mailbox.address,
      header_id: s.messageId,
      in_reply_to: s.inReplyTo,
      refs: s.references,
      subject: s.subject,
      from_address: s.from?.address.toLowerCase() ?? null,
      summary: s,
      authentication: d.authentication,
      spam: d.spam,
      raw_sha256: d.raw.sha256,
      raw_size: d.raw.size,
      mail_from: d.mailFrom,
      received_at: d.receivedAt,
      position: e.position,
      search_words: `${s.subject} ${participantWords([s.from, ...s.to, ...s.cc])}`,
    };
  });
  await sql`INSERT INTO thread_messages (workspace_id, id, thread_id, address, header_id, in_reply_to, refs, subject,
      from_address, summary, authentication, spam, raw_sha256, raw_size, mail_from, received_at, position, search_words)
    SELECT workspace_id, id, thread_id, address, header_id, in_reply_to, refs, subject, from_address, summary,
      authentication, spam, raw_sha256, raw_size, mail_from, received_at, position, search_words
    FROM jsonb_to_recordset(${JSON.stringify(messages)}::jsonb) AS r(workspace_id text, id text, thread_id text,
      address text, header_id text, in_reply_to text[], refs text[], subject text, from_address text, summary jsonb,
      authentication jsonb, spam jsonb, raw_sha256 text, raw_size bigint, mail_from text, received_at timestamptz,
      position bigint, search_words text)
    ORDER BY position
    ON CONFLICT (id) DO NOTHING`.execute(db);

  const threads = new Map<
    string,
    { first: Arrival; label: string; latest: Arrival; lastAt: number; participants: Set<string> }
  >();
  for (const e of arrivals) {
    const at = Date.parse(e.data.receivedAt);
    const t = threads.get(e.data.threadId);
    if (!t) {
      threads.set(e.data.threadId, {
        first: e,
        label: e.data.label,
        latest: e,
        lastAt: at,
        participants: new Set(participantsOf(e)),
      });
      continue;
    }
    t.label = e.data.label;
    if (at >= t.lastAt) {
      t.latest = e;
      t.lastAt = at;
    }
    for (const p of participantsOf(e)) t.participants.add(p);
  }
  const opened = [...threads.values()].map(({ first: e }) => ({
    workspace_id: e.metadata.workspaceId,
    id: e.data.threadId,
    address: e.data.mailbox.address,
    address_id: e.data.mailbox.addressId,
    domain_id: e.data.mailbox.domainId,
    domain: e.data.mailbox.domain,
    label: e.data.label,
    subject: e.data.summary.subject,
    normalised_subject: e.data.normalisedSubject,
    snippet: e.data.summary.snippet,
    participants: participantsOf(e),
    at: e.data.receivedAt,
  }));
  await sql`INSERT INTO threads (workspace_id, id, address, address_id, domain_id, domain, label, unread, subject,
      normalised_subject, snippet, participants, message_count, last_message_at, created_at)
    SELECT workspace_id, id, address, address_id, domain_id, domain, label, true, subject, normalised_subject, snippet,
      participants, 0, at, at
    FROM jsonb_to_recordset(${JSON.stringify(opened)}::jsonb) AS r(workspace_id text, id text, address text,
      address_id text, domain_id text, domain text, label text, subject text, normalised_subject text, snippet text,
      participants text[], at timestamptz)
    ON CONFLICT (id) DO NOTHING`.execute(db);

  const touched = [...threads.entries()].map(([id, t]) => ({
    id,
    label: t.label,
    snippet: t.latest.data.summary.snippet,
    at: t.latest.data.receivedAt,
    participants: [...t.participants],
  }));
  await sql`UPDATE threads t SET label = u.label, unread = true,
      snippet = CASE WHEN u.at >= t.last_message_at THEN u.snippet ELSE t.snippet END,
      last_message_at = GREATEST(t.last_message_at, u.at),
      participants = ARRAY(SELECT DISTINCT p FROM unnest(t.participants || u.participants) p ORDER BY p),
      message_count = c.n,
      search = to_tsvector('simple', c.words)
    FROM jsonb_to_recordset(${JSON.stringify(touched)}::jsonb) AS u(id text, label text, snippet text, at timestamptz,
      participants text[])
    CROSS JOIN LATERAL (SELECT count(*)::int AS n, string_agg(search_words, ' ' ORDER BY position) AS words
      FROM thread_messages WHERE thread_id = u.id) c
    WHERE t.id = u.id`.execute(db);
}
