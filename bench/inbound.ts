/**
 * Inbound mail: N messages (INBOUND_MESSAGES, default 5,000; about 3 KB, DKIM-signed, one in ten
 * with a small attachment) sent over SMTP by a child process (bench/inbound-sender.ts),
 * INBOUND_IN_FLIGHT (default 50) at a time over 10 sessions. Three servers in this process, one
 * after the other, each fed the same messages:
 *
 *   inbound.floor   a bare smtp-server that reads and discards each message (the floor)
 *   inbound.store   our listener: every recipient accepted, each message streamed into the file
 *                   blob store (fsync'd) behind our trace lines; the handler does nothing more
 *   inbound.full    the same plus, before the 250, what the receiving slice will run per message:
 *                   SPF/DKIM/DMARC/ARC through the DNS port (loopback DNS server, cached as
 *                   delivery caches), the parsed summary with attachments into the blob store,
 *                   the thread choice and the spam verdict
 *   inbound.slice   the receiving slice as the server starts it (startInbound over a real system on
 *                   PostgreSQL): the above plus the RCPT lookup, the body's text index, the
 *                   threading lookups and the MessageReceived append with its read-model wait
 *
 * Each figure: messages/s, client-side latency p50/p99 (hand-over to 250), RSS of this (the
 * server's) process before, at its peak and after, and the CPU per message of this process and of
 * PostgreSQL's (every backend alive at both ends of the run; the slice's pool stays open), and the
 * RSS at the end of each tenth of the run. `inbound.slice`, with the mailbox's three rules
 * evaluated on every message (bench/inbound-mail.ts), is the target (>= 300 messages/s,
 * p99 DATA-to-250 under 200 ms).
 */
import { fork } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SMTPServer } from 'smtp-server';
import { chooseThread } from '../domain/messages/threading.ts';
import { spamVerdict } from '../domain/messages/spam.ts';
import { FileBlobStore } from '../infra/blobs/files.ts';
import { CachedDns } from '../infra/dns/cache.ts';
import { NodeDns } from '../infra/dns/resolver.ts';
import { authenticateMessage } from '../infra/inbound/authenticate.ts';
import { InboundListener } from '../infra/inbound/listener.ts';
import type { InboundHandler } from '../infra/inbound/port.ts';
import { parseMessage } from '../infra/inbound/summary.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { publishSender, receivingSlice, SENDER_DOMAIN, SENDER_SELECTOR } from './inbound-mail.ts';
import type { SenderReply, SenderRequest } from './inbound-sender.ts';
import { openSystem } from '../system.ts';
import { besideBench, emit, freshDatabase, note, postgresCpuMeter, round } from './support.ts';

const MESSAGES = Number(process.env.INBOUND_MESSAGES ?? 5_000);
const IN_FLIGHT = Number(process.env.INBOUND_IN_FLIGHT ?? 50);
const SESSIONS = 10;
/** Which runs beside the floor (INBOUND_RUNS=store,full,slice; all by default): a shorter loop while working on one. */
const RUNS = new Set((process.env.INBOUND_RUNS ?? 'store,full,slice').split(','));

export async function inboundBench(): Promise<void> {
  const teardown: (() => Promise<void> | void)[] = [];
  const dir = await mkdtemp(path.join(tmpdir(), 'wms-bench-inbound-'));
  const sender = startSender();
  try {
    const dnsServer = await startDnsServer({ teardown: (fn) => teardown.push(fn) });
    const privateKeyPem = await publishSender(dnsServer);
    const dns = new CachedDns(new NodeDns({ servers: [dnsServer.address] }));

    note(`inbound: preparing ${MESSAGES} signed messages`);
    const { avgBytes } = await sender.ask(
      { type: 'prepare', messages: MESSAGES, privateKeyPem, domain: SENDER_DOMAIN, selector: SENDER_SELECTOR },
      'prepared',
    );

    const floor = new SMTPServer({
      logger: false,
      authOptional: true,
      disabledCommands: ['STARTTLS', 'AUTH'],
      maxAllowedUnauthenticatedCommands: false,
      size: 50 * 1024 * 1024,
      onData(stream, _session, callback) {
        stream.on('end', () => callback());
        stream.resume();
      },
    });
    await new Promise<void>((resolve) => floor.listen(0, '127.0.0.1', resolve));
    const floorFigure = await run('inbound.floor', sender, (floor.server.address() as { port: number }).port, avgBytes);
    await new Promise<void>((resolve) => floor.close(() => resolve()));

    const storeOnly = new FileBlobStore({ dir: path.join(dir, 'store') });
    if (RUNS.has('store'))
      await listenerRun('inbound.store', sender, storeOnly, async () => ({ accept: true }), avgBytes, floorFigure);

    const blobs = new FileBlobStore({ dir: path.join(dir, 'full') });
    let spam = 0;
    const full: InboundHandler<string> = {
      async receive(message) {
        const [auth, parsed] = await Promise.all([
          authenticateMessage(dns, await message.open(), {
            ip: message.client.address,
            helo: message.client.helo,
            mailFrom: message.mailFrom,
            hostname: 'mx.ours.test',
          }),
          parseMessage(blobs, await message.open(), message.blob.size),
        ]);
        const s = parsed.summary;
        chooseThread(
          {
            messageId: s.messageId,
            inReplyTo: s.inReplyTo,
            references: s.references,
            subject: s.subject,
            from: s.from?.address ?? null,
            at: message.receivedAt.toISOString(),
          },
          { threadOfMessageId: new Map(), referencedBy: [], bySubject: [] },
        );
        if (spamVerdict(auth, null).spam || auth.dkim[0]?.result !== 'pass') spam++;
        return { accept: true };
      },
    };
    if (RUNS.has('full')) await listenerRun('inbound.full', sender, blobs, full.receive, avgBytes, floorFigure);
    if (spam > 0) throw new Error(`inbound.full: ${spam} messages did not authenticate`);
    if (RUNS.has('slice')) await sliceRun(sender, dnsServer.address, path.join(dir, 'slice'), avgBytes, floorFigure);
  } finally {
    await sender.close();
    for (const fn of teardown.reverse()) await fn();
    await rm(dir, { recursive: true, force: true });
  }
}

async function listenerRun(
  bench: string,
  sender: Sender,
  blobs: FileBlobStore,
  receive: InboundHandler<string>['receive'],
  avgBytes: number,
  floor: { messagesPerSec: number },
) {
  const listener = await InboundListener.start<string>({
    port: 0,
    host: '127.0.0.1',
    hostname: 'mx.ours.test',
    maxMessageBytes: 50 * 1024 * 1024,
    blobs,
    policy: { accept: async ({ address }) => ({ accept: true, recipient: address }) },
    handler: { receive },
  });
  try {
    await run(bench, sender, listener.port, avgBytes, floor);
  } finally {
    await listener.close();
  }
}

/**
 * The receiving slice as the server runs it (`startInbound`): the RCPT lookup in the read
 * models, then authentication, parsing, the text index, threading lookups and the append of
 * `MessageReceived` with its read-your-writes wait, all before the 250; PostgreSQL on loopback.
 */
async function sliceRun(
  sender: Sender,
  dnsAddress: string,
  dataDir: string,
  avgBytes: number,
  floor: { messagesPerSec: number },
) {
  const database = await freshDatabase('inbound');
  try {
    const system = await openSystem(database.url, {
      secretsKey: Buffer.alloc(32, 5).toString('base64'),
      deliver: false,
      dataDir,
      dns: { servers: [dnsAddress] },
    });
    try {
      const listener = await receivingSlice(system);
      try {
        await run('inbound.slice', sender, listener.port, avgBytes, floor, database.name);
      } finally {
        await listener.close();
      }
      const { rows } = await system.database.pool.query('SELECT count(*)::int AS n FROM thread_messages');
      if (rows[0].n !== MESSAGES) throw new Error(`inbound.slice: ${rows[0].n} of ${MESSAGES} messages filed`);
      await system.runner.waitFor(await system.store.headPosition(), ['RuleRunRecorded']);
      const matched = await system.database.pool.query('SELECT sum(match_count)::int AS n FROM rules');
      const withAttachment = Math.ceil(MESSAGES / 10);
      if (matched.rows[0].n !== withAttachment)
        throw new Error(
          `inbound.slice: rules matched ${matched.rows[0].n} messages, not the ${withAttachment} with an attachment`,
        );
    } finally {
      await system.close();
    }
  } finally {
    await database.drop();
  }
}

/** `database`: the run's, whose sessions PostgreSQL's CPU is counted over (else every PostgreSQL process). */
async function run(
  bench: string,
  sender: Sender,
  port: number,
  avgBytes: number,
  floor?: { messagesPerSec: number },
  database?: string,
) {
  note(`${bench}: sending`);
  const rssStart = process.memoryUsage.rss();
  let rssPeak = rssStart;
  // Every second's RSS as well as the peak: whether it stays flat over a long run shows in its course.
  const rssEverySecond: number[] = [];
  let ticks = 0;
  const sampler = setInterval(() => {
    const rss = process.memoryUsage.rss();
    rssPeak = Math.max(rssPeak, rss);
    if (++ticks % 10 === 0) rssEverySecond.push(rss);
  }, 100);
  const cpuStart = process.cpuUsage();
  const postgresCpu = postgresCpuMeter(database);
  const result = await sender.ask({ type: 'send', port, inFlight: IN_FLIGHT, sessions: SESSIONS }, 'sent');
  const cpu = process.cpuUsage(cpuStart);
  const postgresSeconds = postgresCpu();
  clearInterval(sampler);
  if (result.failed > 0) throw new Error(`${bench}: ${result.failed} messages failed: ${result.firstError}`);
  const messagesPerSec = round(MESSAGES / result.seconds);
  const mb = (bytes: number) => round(bytes / 1024 / 1024);
  await emit({
    bench,
    messages: MESSAGES,
    inFlight: IN_FLIGHT,
    sessions: SESSIONS,
    avgMessageBytes: avgBytes,
    seconds: round(result.seconds, 2),
    messagesPerSec,
    p50Ms: round(result.p50Ms),
    p99Ms: round(result.p99Ms),
    rssStartMb: mb(rssStart),
    rssPeakMb: mb(rssPeak),
    rssEndMb: mb(process.memoryUsage.rss()),
    rssCourseMb: tenths(rssEverySecond).map(mb),
    serverCpuMsPerMessage: round((cpu.user + cpu.system) / 1000 / MESSAGES, 2),
    postgresCpuMsPerMessage: round((postgresSeconds * 1000) / MESSAGES, 2),
    ...(floor ? { ratio: round(messagesPerSec / floor.messagesPerSec, 2) } : {}),
  });
  return { messagesPerSec };
}

/** The samples at the end of each tenth of the run (all of them when there are ten or fewer). */
function tenths(samples: number[]): number[] {
  if (samples.length <= 10) return samples;
  return Array.from({ length: 10 }, (_, i) => samples[Math.ceil(((i + 1) * samples.length) / 10) - 1]!);
}

interface Sender {
  ask<T extends SenderReply['type']>(request: SenderRequest, type: T): Promise<Extract<SenderReply, { type: T }>>;
  close(): Promise<void>;
}

function startSender(): Sender {
  const child = fork(besideBench('inbound-sender'), [], {
    stdio: ['ignore', 2, 2, 'ipc'],
  });
  const reply = <T extends SenderReply['type']>(type: T) =>
    new Promise<Extract<SenderReply, { type: T }>>((resolve, reject) => {
      const onMessage = (m: SenderReply) => {
        if (m.type !== type) return;
        child.off('exit', onExit);
        child.off('message', onMessage);
        resolve(m as Extract<SenderReply, { type: T }>);
      };
      const onExit = (code: number | null) => {
        child.off('message', onMessage);
        reject(new Error(`the inbound sender exited (${code}) before '${type}'`));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  return {
    ask: (request, type) => {
      const answer = reply(type);
      child.send(request);
      return answer;
    },
    close: async () => {
      if (child.exitCode !== null) return;
      const closed = reply('closed');
      child.send({ type: 'close' } satisfies SenderRequest);
      await closed;
    },
  };
}
