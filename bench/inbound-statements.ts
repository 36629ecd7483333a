/**
 * The PostgreSQL statements one received message costs, counted rather than timed (issue 19):
 * `npx tsx bench/inbound-statements.ts [N]` (N: 50 by default).
 *
 * The receiving slice runs in this process as bench/inbound.ts's `inbound.slice` starts it
 * (`openSystem` + `startInbound`, one workspace, one address on a verified domain, the loopback
 * DNS server publishing the sender's SPF, DKIM and DMARC). N messages of the bench's shape (DKIM
 * signed, a reply, one in ten with an attachment) go over SMTP through nodemailer, one at a time
 * (each followed by SETTLE_MS, 1,500 by default) or CONCURRENCY at a time, and every statement
 * `pg.Client#query` is given is counted, grouped by text, per message:
 *
 * - `rcpt`: issued by the RCPT policy's chain (the mailbox lookup);
 * - `data`: issued by the DATA handler's chain before its answer (the 250); their round trips
 *   (statements whose time in flight overlaps count as one) are the sequential ones;
 * - `after`: issued by the handler's chain after its answer;
 * - `other`: issued by the service's own loops (projectors, reactors, the bus) meanwhile and until
 *   SETTLE_MS after the last answer. One at a time they are exact per message (with the pollers of
 *   a SETTLE_MS window); at a time they share batches as under load.
 *
 * While counting it also takes the CPU a message costs: this process's (the whole slice and the
 * sender), this database's PostgreSQL sessions', and the processes every database shares (WAL
 * writer, checkpointer: other work on the machine moves these). LOG_DURATIONS=1 has PostgreSQL log
 * every statement's duration of the bench's database (for the operator to sum from its log; its
 * durations include waits), AUTO_EXPLAIN=<ms> with it the plans of statements that ran longer, and
 * KEEP_DB=1 leaves the database for EXPLAIN afterwards (drop it yourself).
 *
 * Not part of `npm run bench`: it asserts nothing and measures no time that matters.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createTransport } from 'nodemailer';
import pg from 'pg';
import { InboundListener, type InboundListenerOptions } from '../infra/inbound/listener.ts';
import { openSystem } from '../system.ts';
import { startDnsServer } from '../test/support/dns-server.ts';
import { publishSender, receivingSlice, inboundMessage, SENDER_DOMAIN, SENDER_SELECTOR } from './inbound-mail.ts';
import { bindPoolCallbacks, roundTrips, timeInFlight, watchStatements } from './statements.ts';
import { ADMIN_URL, freshDatabase, postgresCpuMeter } from './support.ts';

const N = Number(process.argv[2] ?? 50);
const WARMUP = 5;
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 1);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 1500);

interface Flight {
  kind: 'rcpt' | 'data';
  answered: boolean;
  spans: [number, number][];
}

type Where = 'rcpt' | 'data' | 'after' | 'other';
const counts: Record<Where, Map<string, number>> = {
  rcpt: new Map(),
  data: new Map(),
  after: new Map(),
  other: new Map(),
};
let counting = false;
const chain = new AsyncLocalStorage<Flight>();
const trips: number[] = [];

watchStatements((text) => {
  if (!counting) return undefined;
  const flight = chain.getStore();
  const where: Where = flight === undefined ? 'other' : flight.answered ? 'after' : flight.kind;
  counts[where].set(text, (counts[where].get(text) ?? 0) + 1);
  return where === 'data' ? timeInFlight(flight!.spans) : undefined;
});

bindPoolCallbacks();

// The listener's policy and handler run each in a flight of its own: RCPT's, DATA's until its answer.
const start = InboundListener.start.bind(InboundListener);
InboundListener.start = <R>(options: InboundListenerOptions<R>) =>
  start({
    ...options,
    policy: { accept: (q) => chain.run({ kind: 'rcpt', answered: false, spans: [] }, () => options.policy.accept(q)) },
    handler: {
      async receive(message) {
        const flight: Flight = { kind: 'data', answered: false, spans: [] };
        try {
          return await chain.run(flight, () => options.handler.receive(message));
        } finally {
          flight.answered = true;
          if (counting) trips.push(roundTrips(flight.spans));
        }
      },
    },
  });

const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));
async function main(): Promise<void> {
  const teardown: (() => Promise<void> | void)[] = [];
  const database = await freshDatabase('inbound-statements');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-inbound-statements-'));
  let cpu = { node: 0, postgres: 0, shared: 0 };
  try {
    if (process.env.LOG_DURATIONS) {
      const admin = new pg.Client({ connectionString: ADMIN_URL });
      await admin.connect();
      await admin.query(`ALTER DATABASE ${database.name} SET log_min_duration_statement = 0`);
      if (process.env.AUTO_EXPLAIN) {
        await admin.query(`ALTER DATABASE ${database.name} SET session_preload_libraries = 'auto_explain'`);
        await admin.query(
          `ALTER DATABASE ${database.name} SET auto_explain.log_min_duration = '${Number(process.env.AUTO_EXPLAIN)}ms'`,
        );
      }
      await admin.end();
      console.log(`logging every statement's duration of ${database.name}`);
    }
    const dnsServer = await startDnsServer({ teardown: (fn) => teardown.push(fn) });
    const privateKeyPem = await publishSender(dnsServer);
    const system = await openSystem(database.url, {
      secretsKey: Buffer.alloc(32, 5).toString('base64'),
      deliver: false,
      dataDir,
      dns: { servers: [dnsServer.address] },
    });
    try {
      const listener = await receivingSlice(system);
      const transport = createTransport({
        pool: true,
        host: '127.0.0.1',
        port: listener.port,
        maxConnections: Math.max(1, CONCURRENCY),
        maxMessages: Infinity,
        ignoreTLS: true,
      });
      const stamp = Date.now();
      const send = async (i: number) => {
        const signed = await inboundMessage(
          i,
          { domain: SENDER_DOMAIN, selector: SENDER_SELECTOR, privateKeyPem },
          stamp,
        );
        await transport.sendMail({
          envelope: { from: `carol@${SENDER_DOMAIN}`, to: ['ann@ours.example.com'] },
          raw: signed,
        });
        if (CONCURRENCY === 1) await settle();
      };
      try {
        for (let i = 0; i < WARMUP; i++) await send(i);
        await settle();
        counting = true;
        const nodeCpu = process.cpuUsage();
        const postgresCpu = postgresCpuMeter(database.name);
        // No session belongs to this name: the processes every database shares.
        const sharedCpu = postgresCpuMeter('\u0000');
        let next = WARMUP;
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async () => {
            while (next < WARMUP + N) await send(next++);
          }),
        );
        await settle();
        counting = false;
        const node = process.cpuUsage(nodeCpu);
        cpu = { node: (node.user + node.system) / 1e6, postgres: postgresCpu(), shared: sharedCpu() };
      } finally {
        transport.close();
        await listener.close();
      }
    } finally {
      await system.close();
    }
  } finally {
    for (const fn of teardown.reverse()) await fn();
    if (!process.env.KEEP_DB) await database.drop();
    else console.log(`kept ${database.name}`);
    await rm(dataDir, { recursive: true, force: true });
  }

  const per = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0) / N;
  console.log(`${N} messages over SMTP, ${CONCURRENCY} at a time, statements per message:`);
  for (const where of ['rcpt', 'data', 'after', 'other'] as const) {
    console.log(`\n${where}: ${per(counts[where]).toFixed(2)}`);
    for (const [text, count] of [...counts[where]].sort((a, b) => b[1] - a[1]))
      console.log(`  ${(count / N).toFixed(2).padStart(6)}  ${text}`);
  }
  const ms = (seconds: number) => ((seconds * 1000) / N).toFixed(2);
  console.log(
    `\nCPU per message (ms): Node ${ms(cpu.node)}, PostgreSQL ${ms(cpu.postgres)} ` +
      `(sessions ${ms(cpu.postgres - cpu.shared)}, shared processes ${ms(cpu.shared)})`,
  );
  const sorted = [...trips].sort((a, b) => a - b);
  console.log(
    `\nsequential round trips of DATA before its answer: mean ${(trips.reduce((a, b) => a + b, 0) / trips.length).toFixed(2)}, ` +
      `min ${sorted[0]}, median ${sorted[Math.floor(sorted.length / 2)]}, max ${sorted.at(-1)}`,
  );
}

await main();
