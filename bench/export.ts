/**
 * Workspace export of EXPORT_MESSAGES (default 100,000) messages with attachments: `POST /exports`
 * to the service in its own process, then `GET /exports/{id}` until ready.
 *
 * The seed, as bench/threads-list.ts: `MessageReceived` events written with SQL (threads of four,
 * one mailbox) for the service's threads projector to file when the server starts; the raw
 * messages the export reads go into the blob store as the server keeps them: rows of
 * `blobs_small` (infra/blobs/postgres.ts) for those up to 256 KiB, made in SQL (2 to 8 KB of
 * text; one in twenty with an attachment of 20 to 200 KB of random bytes in base64), and files of
 * the file store for one in a thousand (an attachment of 1 MB, written from here).
 *
 *   export.run    zip bytes, seconds from the export's start to ready, MB/s of zip written (and of
 *                 raw mail read), the server process's RSS (sampled every 100 ms) before, at its
 *                 peak and after. Target: RSS <= 300 MB.
 *   export.zip    the zip library on its own (bench/zip-writer.ts, a child process each):
 *                 ZIP_SMALL_ENTRIES (100,000) small entries and ZIP_LARGE_ENTRIES (10) of
 *                 ZIP_LARGE_MB (50) MB into a sink, with yazl and with archiver (all appended up
 *                 front, and paced one entry at a time): MB/s in and out, RSS peak.
 */
import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createAddress } from '../commands/addresses/handlers.ts';
import { addDomain } from '../commands/domains/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { FileBlobStore } from '../infra/blobs/files.ts';
import { openSystem } from '../system.ts';
import {
  besideBench,
  emit,
  freshDatabase,
  note,
  RssSampler,
  round,
  seedInChunks,
  startServer,
  waitForCheckpoint,
} from './support.ts';
import type { ZipDone, ZipLibrary } from './zip-writer.ts';

const MESSAGES = Number(process.env.EXPORT_MESSAGES ?? 100_000);
const ZIP_SMALL = Number(process.env.ZIP_SMALL_ENTRIES ?? 100_000);
const ZIP_LARGE = Number(process.env.ZIP_LARGE_ENTRIES ?? 10);
const ZIP_LARGE_MB = Number(process.env.ZIP_LARGE_MB ?? 50);
/** EXPORT_PARTS: the export, the zip libraries alone, or both (default `export,zip`). */
const PARTS = new Set((process.env.EXPORT_PARTS ?? 'export,zip').split(','));
const PER_THREAD = 4;
const CHUNK = 5_000;
/** One message in this many is over the row tier's 256 KiB: a file of the file store. */
const LARGE_EVERY = 1_000;
const MAILBOX = 'ann@ours.example.com';
const MB = 1024 * 1024;
const RSS_TARGET = 'RSS peak <= 300 MB';

/**
 * Message n (1-based): raw bytes (null for the large ones, made outside SQL), their SHA-256 and
 * size into `blobs_small`, and a `MessageReceived` naming them (data per domain/threads/events.ts).
 * $1, $2 the chunk; $3 the workspace; $4 the mailbox; $5 the large ones' `{sha256, size}` in order.
 */
const SEED_CHUNK = `
WITH base AS MATERIALIZED (
  SELECT n, (n - 1) / ${PER_THREAD} AS t, (n - 1) % ${PER_THREAD} AS rev,
         format('p%s@corr%s.test', n % 1000, n % 100) AS sender,
         format('Re: notes %s', (n - 1) / ${PER_THREAD}) AS subject,
         timestamptz '2025-01-01 00:00:00+00' + n * interval '1 second' AS received_at
  FROM generate_series($1::int, $2::int) AS n
), raws AS MATERIALIZED (
  SELECT b.*, CASE WHEN n % ${LARGE_EVERY} = 0 THEN NULL ELSE convert_to(
    format(E'From: Person %s <%s>\\r\\nTo: Ann <${MAILBOX}>\\r\\nSubject: %s\\r\\nMessage-ID: <m%s@corr.test>\\r\\n'
      || E'Date: %s\\r\\nMIME-Version: 1.0\\r\\n', n % 1000, sender, subject, n,
      to_char(received_at AT TIME ZONE 'UTC', 'Dy, DD Mon YYYY HH24:MI:SS "+0000"'))
    || CASE WHEN a.b64 IS NULL
       THEN E'Content-Type: text/plain; charset=utf-8\\r\\n\\r\\n' || x.text || E'\\r\\n'
       ELSE E'Content-Type: multipart/mixed; boundary="b"\\r\\n\\r\\n--b\\r\\nContent-Type: text/plain; charset=utf-8\\r\\n\\r\\n'
         || x.text || format(E'\\r\\n--b\\r\\nContent-Type: application/pdf; name="r%s.pdf"\\r\\n'
         || E'Content-Disposition: attachment; filename="r%s.pdf"\\r\\nContent-Transfer-Encoding: base64\\r\\n\\r\\n', n, n)
         || a.b64 || E'\\r\\n--b--\\r\\n' END, 'UTF8') END AS raw
  FROM base b
  CROSS JOIN LATERAL (
    SELECT string_agg(format('Thanks for the notes from the call about %s, item %s. %s', b.subject, i, md5(b.n || 't' || i)),
      E'\\r\\n') AS text
    FROM generate_series(1, 20 + b.n % 60) AS i
  ) x
  CROSS JOIN LATERAL (
    SELECT encode(decode(string_agg(md5(b.n || 'a' || i), ''), 'hex'), 'base64') AS b64
    FROM generate_series(1, CASE WHEN b.n % 20 = 0 AND b.n % ${LARGE_EVERY} <> 0 THEN 1280 + (b.n * 7919) % 11520 ELSE 0 END) AS i
  ) a
), rows AS MATERIALIZED (
  SELECT n, t, rev, sender, subject, received_at, raw,
         coalesce(encode(sha256(raw), 'hex'), $5::jsonb -> (n / ${LARGE_EVERY} - 1) ->> 'sha256') AS sha256,
         coalesce(length(raw), ($5::jsonb -> (n / ${LARGE_EVERY} - 1) ->> 'size')::int) AS size
  FROM raws
), blobs AS (
  INSERT INTO blobs_small (sha256, bytes) SELECT sha256, raw FROM rows WHERE raw IS NOT NULL ON CONFLICT DO NOTHING
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
    'raw', jsonb_build_object('sha256', sha256, 'size', size),
    'summary', jsonb_build_object(
      'messageId', 'm' || n || '@corr.test',
      'inReplyTo', CASE WHEN rev = 0 THEN '[]'::jsonb ELSE jsonb_build_array('m' || (n - 1) || '@corr.test') END,
      'references', CASE WHEN rev = 0 THEN '[]'::jsonb ELSE jsonb_build_array('m' || (n - 1) || '@corr.test') END,
      'date', null, 'subject', subject,
      'from', jsonb_build_object('name', 'Person ' || (n % 1000), 'address', sender),
      'replyTo', '[]'::jsonb,
      'to', jsonb_build_array(jsonb_build_object('name', 'Ann', 'address', '${MAILBOX}')),
      'cc', '[]'::jsonb, 'bcc', '[]'::jsonb, 'headers', '[]'::jsonb, 'headersTruncated', false,
      'snippet', 'Thanks for the notes from the call about ' || subject, 'attachments', '[]'::jsonb, 'size', size),
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

export async function exportBench(): Promise<void> {
  if (PARTS.has('export')) await exportRun();
  if (PARTS.has('zip')) for (const library of ['yazl', 'archiver', 'archiver-paced'] as const) await zipRun(library);
}

async function exportRun(): Promise<void> {
  if (CHUNK % PER_THREAD !== 0 || CHUNK % LARGE_EVERY !== 0) throw new Error('a chunk must hold whole threads');
  const dir = await mkdtemp(path.join(tmpdir(), 'wms-bench-export-'));
  const database = await freshDatabase('export');
  try {
    const dataDir = path.join(dir, 'data');
    const options = { dataDir, secretsKey: Buffer.alloc(32, 9).toString('base64') };
    const system = await openSystem(database.url, { ...options, poolSize: 2 });
    const ws = await createWorkspace(system.commands, { name: 'Bench export', ownerEmail: 'owner@bench.test' });
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

    // The large ones as the server's file store keeps them (the row tier sends them there).
    const files = new FileBlobStore({ dir: path.join(dataDir, 'blobs'), durable: false });
    const large: { sha256: string; size: number }[] = [];
    for (let n = LARGE_EVERY; n <= MESSAGES; n += LARGE_EVERY) {
      const raw = Buffer.from(
        `From: Person ${n % 1000} <p${n % 1000}@corr${n % 100}.test>\r\nTo: Ann <${MAILBOX}>\r\n` +
          `Subject: Re: notes ${(n - 1) / PER_THREAD}\r\nMessage-ID: <m${n}@corr.test>\r\nMIME-Version: 1.0\r\n` +
          'Content-Type: multipart/mixed; boundary="b"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nThe scans.\r\n' +
          `--b\r\nContent-Type: application/pdf; name="scan${n}.pdf"\r\nContent-Transfer-Encoding: base64\r\n\r\n` +
          `${crypto.randomBytes(MB).toString('base64').replace(/.{76}/g, '$&\r\n')}\r\n--b--\r\n`,
      );
      const { sha256, size } = await files.put(raw);
      large.push({ sha256, size });
    }

    note(`export: seeding ${MESSAGES} messages (events and raw bytes) in chunks of ${CHUNK}`);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const seedSeconds = await seedInChunks(client, SEED_CHUNK, MESSAGES, CHUNK, [
      ws.workspaceId,
      mailbox,
      JSON.stringify(large),
    ]);
    await client.query('ANALYZE es_events; ANALYZE blobs_small');
    const head = Number((await client.query('SELECT max(position) AS p FROM es_events')).rows[0].p);
    const { rows: rawRows } = await client.query(
      `SELECT sum((data->'raw'->>'size')::bigint)::bigint AS bytes,
              count(*) FILTER (WHERE (data->'raw'->>'size')::int > 12000)::int AS attachments
       FROM es_events WHERE type = 'MessageReceived'`,
    );
    const rawMb = round(Number(rawRows[0].bytes) / MB);
    await emit({
      bench: 'export.seed',
      messages: MESSAGES,
      rawMb,
      withAttachment: rawRows[0].attachments,
      seconds: round(seedSeconds),
      via: 'SQL generate_series (events and blobs_small rows); files for the largest',
    });

    note('export: starting the server; the threads projector files the messages');
    const server = await startServer(database.url, 0, options);
    try {
      await waitForCheckpoint(client, 'threads', head, { everyMs: 500, label: 'export' });
      await client.query('ANALYZE threads; ANALYZE thread_messages');
      const headers = { authorization: `Bearer ${ws.apiKey}` };
      const rss = new RssSampler(server.pid).start();
      const cpuBefore = await server.cpuSeconds();
      note('export: POST /exports');
      const res = await fetch(`${server.baseUrl}/exports`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': crypto.randomUUID() },
      });
      const created = (await res.json()) as ExportView;
      if (res.status !== 201) throw new Error(`POST /exports answered ${res.status}: ${JSON.stringify(created)}`);
      let view = created;
      let lastNote = Date.now();
      while (view.status === 'queued' || view.status === 'running') {
        await new Promise((r) => setTimeout(r, 500));
        const got = await fetch(`${server.baseUrl}/exports/${created.id}`, { headers });
        if (got.status !== 200) throw new Error(`GET /exports/{id} answered ${got.status}: ${await got.text()}`);
        view = (await got.json()) as ExportView;
        if (Date.now() - lastNote > 15_000) {
          lastNote = Date.now();
          note(`export: ${view.status}, ${view.phase}, ${view.threadsDone} of ${view.threadsTotal} threads`);
        }
      }
      const memory = rss.stop();
      const cpuSeconds = (await server.cpuSeconds()) - cpuBefore;
      if (view.status !== 'ready') throw new Error(`the export ended ${view.status}: ${view.error}`);
      if (view.counts?.messages !== MESSAGES)
        throw new Error(`the export holds ${view.counts?.messages} of ${MESSAGES} messages`);
      const seconds = (Date.parse(view.finishedAt!) - Date.parse(view.startedAt!)) / 1000;
      const zipMb = round(view.sizeBytes! / MB);
      await emit({
        bench: 'export.run',
        messages: MESSAGES,
        threads: view.threadsTotal,
        rawMb,
        zipMb,
        seconds: round(seconds, 2),
        zipMbPerSec: round(zipMb / seconds),
        rawMbPerSec: round(rawMb / seconds),
        messagesPerSec: round(MESSAGES / seconds),
        serverCpuShare: round(cpuSeconds / seconds, 2),
        ...memory,
        target: RSS_TARGET,
        note:
          'seconds from the export started to ready (its startedAt and finishedAt); the zip written to the file store; ' +
          'serverCpuShare: CPU seconds of the server process over those seconds (2 cores)',
      });
    } finally {
      await server.close();
    }
    await client.end();
  } finally {
    await database.drop();
    await rm(dir, { recursive: true, force: true });
  }
}

interface ExportView {
  id: string;
  status: string;
  phase: string;
  startedAt: string | null;
  finishedAt: string | null;
  sizeBytes: number | null;
  threadsDone: number;
  threadsTotal: number;
  counts: Record<string, number> | null;
  error: string | null;
}

async function zipRun(library: ZipLibrary): Promise<void> {
  note(`export: ${library} writing ${ZIP_SMALL} small and ${ZIP_LARGE} large entries to a sink`);
  const child = fork(besideBench('zip-writer'), [library, String(ZIP_SMALL), String(ZIP_LARGE), String(ZIP_LARGE_MB)], {
    stdio: ['ignore', 2, 2, 'ipc'],
  });
  const rss = new RssSampler(child.pid!).start();
  const done = await new Promise<ZipDone>((resolve, reject) => {
    child.once('message', (m: ZipDone) => resolve(m));
    child.once('exit', (code) => reject(new Error(`the ${library} writer exited (${code}) before it was done`)));
  });
  const { rssPeakMb } = rss.stop();
  await emit({
    bench: 'export.zip',
    library,
    smallEntries: ZIP_SMALL,
    largeEntries: ZIP_LARGE,
    largeMb: ZIP_LARGE_MB,
    inMb: round(done.inputBytes / MB),
    outMb: round(done.outputBytes / MB),
    seconds: round(done.seconds, 2),
    inMbPerSec: round(done.inputBytes / MB / done.seconds),
    outMbPerSec: round(done.outputBytes / MB / done.seconds),
    entriesPerSec: round((ZIP_SMALL + ZIP_LARGE) / done.seconds),
    rssBeforeMb: round(done.rssBeforeMb),
    rssPeakMb,
  });
}
