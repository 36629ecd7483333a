/**
 * `GET /threads` over 1,000,000 messages in one workspace (THREADS_LIST_MESSAGES): pages and
 * searches over HTTP, p50/p99 per kind. Issue 19's targets: p99 under 20 ms for a page, under 50
 * ms for a search word.
 *
 * The seed keeps the read model honest: `MessageReceived` events are written into the event store
 * with SQL (as es_append writes them, one transaction per chunk) and the service's own threads
 * projector files them when the server starts, as it would have one by one; the body texts go
 * into `message_texts` as the receiving slice's text index writes them.
 */
import pg from 'pg';
import { createAddress } from '../commands/addresses/handlers.ts';
import { addDomain } from '../commands/domains/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem } from '../system.ts';
import {
  createKeys,
  emit,
  freshDatabase,
  note,
  round,
  Samples,
  seedInChunks,
  startServer,
  waitForCheckpoint,
} from './support.ts';

const MESSAGES = Number(process.env.THREADS_LIST_MESSAGES ?? 1_000_000);
/** Messages per thread: each thread is a conversation of this many, one after the other. */
const PER_THREAD = 4;
const CHUNK = 100_000;
const MAILBOX = 'ann@ours.example.com';
/** Subject words, one per thread in turn: `budget` is in a tenth of the threads. */
const SUBJECT_WORDS = [
  'budget',
  'roadmap',
  'hiring',
  'invoice',
  'offsite',
  'launch',
  'review',
  'contract',
  'audit',
  'travel',
];

/**
 * One MessageReceived per message n (1-based): thread (n-1)/PER_THREAD, its revision (n-1) %
 * PER_THREAD; a reply names the one before (In-Reply-To, References); 1,000 correspondents;
 * one arrival a second. Data per the event's zod schema (domain/threads/events.ts).
 */
const SEED_CHUNK = `
WITH rows AS (
  SELECT n, (n - 1) / ${PER_THREAD} AS t, (n - 1) % ${PER_THREAD} AS rev,
         format('p%s@corr%s.test', n % 1000, n % 100) AS sender,
         format('Re: %s notes %s', (ARRAY[${SUBJECT_WORDS.map((w) => `'${w}'`).join(',')}])[((n - 1) / ${PER_THREAD}) % 10 + 1],
           (n - 1) / ${PER_THREAD}) AS subject,
         timestamptz '2025-01-01 00:00:00+00' + n * interval '1 second' AS received_at,
         md5(n::text) || md5((n + 1)::text) AS sha256
  FROM generate_series($1::int, $2::int) AS n
), texts AS (
  INSERT INTO message_texts (sha256, search)
  SELECT sha256, to_tsvector('simple', format('Thanks for the notes from the call. Item %s of %s. %s', n, subject,
    CASE WHEN n % 10000 = 0 THEN 'quasar' ELSE '' END)) FROM rows
)
INSERT INTO es_events (position, tx_id, stream_id, revision, type, version, data, metadata)
SELECT nextval('es_position_seq'), pg_current_xact_id(), 'ws-' || $3 || '.thread-thr_bench' || t, rev, 'MessageReceived', 1,
  jsonb_build_object(
    'threadId', 'thr_bench' || t,
    'messageId', 'mes_bench' || n,
    'mailbox', $4::jsonb,
    'mailFrom', sender,
    'rcptTo', jsonb_build_array('${MAILBOX}'),
    'client', jsonb_build_object('ip', '127.0.0.1', 'helo', 'mx.corr.test'),
    'raw', jsonb_build_object('sha256', sha256, 'size', 3000),
    'summary', jsonb_build_object(
      'messageId', 'm' || n || '@corr.test',
      'inReplyTo', CASE WHEN rev = 0 THEN '[]'::jsonb ELSE jsonb_build_array('m' || (n - 1) || '@corr.test') END,
      'references', CASE WHEN rev = 0 THEN '[]'::jsonb ELSE jsonb_build_array('m' || (n - 1) || '@corr.test') END,
      'date', null, 'subject', subject,
      'from', jsonb_build_object('name', 'Person ' || (n % 1000), 'address', sender),
      'replyTo', '[]'::jsonb,
      'to', jsonb_build_array(jsonb_build_object('name', 'Ann', 'address', '${MAILBOX}')),
      'cc', '[]'::jsonb, 'bcc', '[]'::jsonb, 'headers', '[]'::jsonb, 'headersTruncated', false,
      'snippet', 'Thanks for the notes from the call. Item ' || n, 'attachments', '[]'::jsonb, 'size', 3000),
    'authentication', jsonb_build_object(
      'spf', jsonb_build_object('result', 'pass', 'domain', 'corr.test'), 'dkim', '[]'::jsonb, 'dmarc', null,
      'dmarcSkipped', null, 'arc', jsonb_build_object('result', 'none', 'instance', 0), 'header', 'mx.ours.test; spf=pass'),
    'spam', jsonb_build_object('spam', false, 'reasons', '[]'::jsonb, 'score', null),
    'threadedBy', CASE WHEN rev = 0 THEN 'new' ELSE 'in-reply-to' END,
    'normalisedSubject', lower(substr(subject, 5)),
    'label', 'inbox',
    'receivedAt', to_char(received_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
  jsonb_build_object('workspaceId', $3::text, 'actor', jsonb_build_object('kind', 'system', 'id', null), 'requestId', null)
FROM rows ORDER BY n`;

interface Page {
  data: { id: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

export async function threadsListBench(): Promise<void> {
  if (CHUNK % PER_THREAD !== 0) throw new Error('a chunk must hold whole threads');
  const database = await freshDatabase('threads_list');
  try {
    const system = await openSystem(database.url, { poolSize: 4 });
    const ws = await createWorkspace(system.commands, { name: 'Bench threads', ownerEmail: 'owner@bench.test' });
    const actor = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
    const now = new Date().toISOString();
    const domainId = await addDomain(system.commands, system.domains, actor, { domain: 'ours.example.com' }, now);
    const { addressId } = await createAddress(
      system.commands,
      actor,
      { address: MAILBOX, localPart: 'ann', domain: 'ours.example.com', domainId, enabled: true },
      now,
    );
    await system.close();
    const mailbox = { addressId, address: MAILBOX, domainId, domain: 'ours.example.com' };

    note(`threads-list: seeding ${MESSAGES} MessageReceived events in chunks of ${CHUNK}`);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const seedSeconds = await seedInChunks(client, SEED_CHUNK, MESSAGES, CHUNK, [ws.workspaceId, mailbox]);
    await client.query('ANALYZE es_events; ANALYZE message_texts');
    const head = Number((await client.query('SELECT max(position) AS p FROM es_events')).rows[0].p);
    await emit({
      bench: 'threads-list.seed',
      events: MESSAGES,
      seconds: round(seedSeconds),
      via: 'SQL generate_series',
    });

    note('threads-list: starting the server; the threads projector files the messages');
    const server = await startServer(database.url);
    try {
      await waitForCheckpoint(client, 'threads', head, { everyMs: 500, label: 'threads-list' });
      const catchUpSeconds = (Date.now() - server.openedAt) / 1000;
      const { rows: counted } = await client.query(
        'SELECT (SELECT count(*) FROM threads)::int AS threads, (SELECT count(*) FROM thread_messages)::int AS messages',
      );
      await emit({
        bench: 'threads-list.catch-up',
        events: MESSAGES,
        ...counted[0],
        seconds: round(catchUpSeconds),
        eventsPerSec: round(MESSAGES / catchUpSeconds),
        note: 'from the server opening the system to the threads checkpoint reaching the head',
      });
      await client.query('ANALYZE threads; ANALYZE thread_messages');

      // Sequential requests would trip the per-key rate limit: 20 keys, round-robin.
      const keys = [ws.apiKey, ...(await createKeys(server.baseUrl, ws.apiKey, 19, ['threads:read']))];
      let turn = 0;
      const get = async (query: Record<string, string | number>): Promise<Page> => {
        const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
        const res = await fetch(`${server.baseUrl}/threads?${params}`, {
          headers: { authorization: `Bearer ${keys[turn++ % keys.length]}` },
        });
        const body = (await res.json()) as Page;
        if (res.status !== 200) throw new Error(`GET /threads answered ${res.status}: ${JSON.stringify(body)}`);
        return body;
      };
      const measure = async (
        kind: string,
        max: number,
        next: (previous: Page | null, i: number) => Record<string, string | number> | null,
        target: string,
      ) => {
        const samples = new Samples(max);
        let previous: Page | null = null;
        let rows = 0;
        const started = Date.now();
        for (let i = 0; i < max && Date.now() - started < 30_000; i++) {
          const query = next(previous, i);
          if (!query) break;
          previous = await samples.time(() => get(query));
          rows += previous.data.length;
        }
        const [p50, p99] = samples.percentiles();
        await emit({
          bench: 'threads-list.get',
          kind,
          requests: samples.length,
          rowsSeen: rows,
          p50Ms: p50,
          p99Ms: p99,
          messages: MESSAGES,
          threads: counted[0].threads,
          target,
        });
      };
      const walk =
        (extra: Record<string, string | number>) =>
        (previous: Page | null): Record<string, string | number> | null =>
          previous === null
            ? { limit: 25, ...extra }
            : previous.nextCursor
              ? { limit: 25, ...extra, cursor: previous.nextCursor }
              : null;
      const random = (n: number) => Math.floor(Math.random() * n);
      const threads = Math.ceil(MESSAGES / PER_THREAD);

      note('threads-list: pages and searches over HTTP');
      for (let i = 0; i < 20; i++) await get({ limit: 25 });
      const page = 'p99 < 20 ms';
      const search = 'p99 < 50 ms';
      await measure('page.walk', 300, walk({}), page);
      await measure('page.mailbox.walk', 300, walk({ address: MAILBOX }), page);
      await measure('page.inbox.unread.walk', 300, walk({ label: 'inbox', unread: 'true' }), page);
      await measure('q.subject-word.walk (a tenth of the threads)', 200, walk({ q: 'budget' }), search);
      await measure('q.thread-number (one thread)', 200, () => ({ q: `notes ${random(threads)}`, limit: 25 }), search);
      await measure(
        'q.participant (a thousandth of the messages)',
        200,
        () => {
          const k = random(1000);
          return { q: `p${k}@corr${k % 100}.test`, limit: 25 };
        },
        search,
      );
      await measure('q.body-word (100 messages, body only)', 200, () => ({ q: 'quasar', limit: 25 }), search);
      await measure('q.no-match', 200, () => ({ q: `nothing${random(1000)}`, limit: 25 }), search);
    } finally {
      await server.close();
    }
    await client.end();
  } finally {
    await database.drop();
  }
}
