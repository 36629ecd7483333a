/**
 * The delivery pipeline of sent mail: messages accepted (composed, put into the blob store,
 * `EmailAccepted` appended, as the accepting request does) and delivered by the process manager
 * (reactor, DueWork on the in-process bus, DKIM signing with the domain's key from the vault,
 * direct delivery through the loopback DNS server to the sink MX of bench/outbound-sink.ts, in
 * its own process). The service runs in this process. Three runs, in this order:
 *
 *   emails-deliver.nodemailer   the floor: nodemailer's pooled transport with its DKIM option
 *                               sending the same messages to the same sink, 100 in flight
 *                               (EMAILS_DELIVER_FLOOR_MESSAGES, default the same count up to 20,000:
 *                               a rate, which a longer run does not change)
 *   emails-deliver.drain        EMAILS_DELIVER_MESSAGES (default 20,000) accepted by 32 writers while
 *                               no process delivers, then a process that delivers is opened: messages/s
 *                               from its start to the last 250, RSS sampled every 500 ms
 *   emails-deliver.paced        EMAILS_DELIVER_PACED (default 100) messages/s for 10 s accepted while it
 *                               delivers: event→250 latency (the accepted event's commit to the 250
 *                               recorded in the answer's `at`) when nothing queues
 *
 * Both sides keep at most 10 sessions to the sink (our per-host limit).
 */
import { rm } from 'node:fs/promises';
import { createTransport } from 'nodemailer';
import pg from 'pg';
import { dkimPrivateKey, loadDomain } from '../commands/domains/handlers.ts';
import { newId } from '../commands/ids.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { emailStream } from '../domain/emails/events.ts';
import { composeMessage } from '../infra/outbound/compose.ts';
import { DIRECT_DEFAULTS } from '../infra/outbound/direct.ts';
import { openSystem, serve, type System } from '../system.ts';
import { TEST_SECRETS_KEY } from '../test/support/secrets.ts';
import { DOMAIN, message, startSink, type Sink } from './outbound.ts';
import { concurrently, emit, freshDatabase, msSince, note, percentiles, round, Samples } from './support.ts';

const MESSAGES = Number(process.env.EMAILS_DELIVER_MESSAGES ?? 20_000);
const FLOOR_MESSAGES = Number(process.env.EMAILS_DELIVER_FLOOR_MESSAGES ?? Math.min(MESSAGES, 20_000));
const WRITERS = 32;
const PACED_PER_SECOND = Number(process.env.EMAILS_DELIVER_PACED ?? 100);
const PACED_SECONDS = 10;
const CONNECTIONS = DIRECT_DEFAULTS.maxConnectionsPerHost;
const mb = (bytes: number) => round(bytes / 1024 / 1024);

interface Sender {
  workspaceId: string;
  domainId: string;
}

export async function emailsDeliverBench(): Promise<void> {
  const database = await freshDatabase('emails_deliver');
  const sink = await startSink();
  const open = (deliver: boolean) =>
    openSystem(database.url, {
      secretsKey: TEST_SECRETS_KEY,
      dataDir: `/tmp/${database.name}`,
      dns: { servers: [sink.dnsAddress] },
      domainChecks: { pollMs: 3_600_000 },
      outbound: { mxPort: sink.smtpPort, mxAllowPrivate: true, heloName: 'bench.sender.test' },
      emailDelivery: { pollMs: 20 },
      deliver,
    });
  let system = await open(false);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const sender = await addSender(system);
    const domain = await loadDomain(system.commands, sender.workspaceId, sender.domainId);
    const pem = await dkimPrivateKey(system.domains.secrets, sender.domainId, domain.dkim!.keyId);
    note(`emails-deliver: ${MESSAGES} messages, ${WRITERS} writers, ${CONNECTIONS} sessions to the sink`);

    const floor = await nodemailerFloor(sink, domain.dkim!.selector, pem);
    system = await drain(system, open, client, sink, sender, floor);
    // The read models and reactors catch up on the drain's answers first: the paced run measures a quiet pipeline.
    await system.runner.waitFor(await headPosition(client), ['EmailSendingStarted', 'EmailRecipientDelivered'], {
      onDeadline: () => true,
    });
    await paced(system, client, sink, sender);
  } finally {
    await client.end();
    await system.close();
    await sink.close();
    await database.drop();
    await rm(`/tmp/${database.name}`, { recursive: true, force: true });
  }
}

async function addSender(system: System): Promise<Sender> {
  const ws = await createWorkspace(system.commands, { name: 'Bench', ownerEmail: 'owner@bench.test' });
  const app = await serve(system);
  const res = await app.inject({
    method: 'POST',
    url: '/domains',
    headers: { authorization: `Bearer ${ws.apiKey}` },
    payload: { domain: DOMAIN },
  });
  await app.close();
  if (res.statusCode !== 201) throw new Error(`POST /domains answered ${res.statusCode}: ${res.body}`);
  return { workspaceId: ws.workspaceId, domainId: res.json().id };
}

/** Composes message `i`, stores it and appends its acceptance; answers when the append committed. */
async function accept(system: System, sender: Sender, i: number): Promise<void> {
  const m = message(i);
  const { raw } = await composeMessage(m);
  const blob = await system.blobs.put(raw);
  const emailId = newId.email();
  // Appended as the accepting request does, without waiting for read models (none is measured here).
  await system.store.append(
    emailStream(sender.workspaceId, emailId),
    [
      {
        type: 'EmailAccepted',
        version: 1,
        metadata: { workspaceId: sender.workspaceId, actor: { kind: 'system', id: null }, requestId: null },
        data: {
          emailId,
          messageId: m.messageId.slice(1, -1),
          from: {
            addressId: 'addr_000000000000000000000000',
            domainId: sender.domainId,
            email: m.from.address,
            name: null,
          },
          replyTo: [],
          subject: m.subject,
          recipients: m.to.map((a) => ({
            email: a.address,
            kind: 'to' as const,
            status: 'queued' as const,
            reason: null,
          })),
          stream: 'transactional',
          tags: [],
          raw: { sha256: blob.sha256, size: blob.size },
          template: null,
          signatureId: null,
          inReplyTo: null,
          scheduledAt: null,
          mode: 'live',
          source: 'api',
          acceptedAt: new Date().toISOString(),
        },
      },
    ],
    'no_stream',
  );
}

async function nodemailerFloor(sink: Sink, selector: string, privateKey: string): Promise<number> {
  note('emails-deliver.nodemailer: sending');
  const transport = createTransport({
    pool: true,
    host: '127.0.0.1',
    port: sink.smtpPort,
    maxConnections: CONNECTIONS,
    maxMessages: Infinity,
    ignoreTLS: true,
    dkim: { domainName: DOMAIN, keySelector: selector, privateKey },
  });
  const before = await sink.count();
  const latency = new Samples(FLOOR_MESSAGES);
  const rss = rssSampler();
  let next = 0;
  const started = process.hrtime.bigint();
  await concurrently(100, async () => {
    for (let i = next++; i < FLOOR_MESSAGES; i = next++) {
      await latency.time(async () => {
        const m = message(i);
        const { raw } = await composeMessage(m);
        await transport.sendMail({
          raw,
          envelope: { from: `bounce@bounces.${DOMAIN}`, to: m.to.map((a) => a.address) },
        });
      });
    }
  });
  const seconds = msSince(started) / 1000;
  transport.close();
  await arrivedAll(sink, before, FLOOR_MESSAGES);
  const [p50, p99] = latency.percentiles([50, 99]);
  const messagesPerSec = round(FLOOR_MESSAGES / seconds);
  await emit({
    bench: 'emails-deliver.nodemailer',
    messages: FLOOR_MESSAGES,
    seconds: round(seconds, 2),
    messagesPerSec,
    p50Ms: p50,
    p99Ms: p99,
    ...rss.stop(),
  });
  return messagesPerSec;
}

async function drain(
  seeding: System,
  open: (deliver: boolean) => Promise<System>,
  client: pg.Client,
  sink: Sink,
  sender: Sender,
  floorPerSec: number,
): Promise<System> {
  note('emails-deliver.drain: accepting');
  const before = await sink.count();
  const since = await headPosition(client);
  const accepting = process.hrtime.bigint();
  let next = 0;
  await concurrently(WRITERS, async () => {
    for (let i = next++; i < MESSAGES; i = next++) await accept(seeding, sender, i);
  });
  const acceptSeconds = msSince(accepting) / 1000;
  // The schedule holds every message before delivery starts.
  await seeding.runner.waitFor(await headPosition(client), ['EmailAccepted'], { onDeadline: () => true });
  await seeding.close();
  note('emails-deliver.drain: delivering');
  const rss = rssSampler();
  const system = await open(true);
  await delivered(client, since, MESSAGES);
  const usage = rss.stop();
  // From the first message taken in hand to the last 250: the process's start-up is not delivery.
  const { rows } = await client.query<{ seconds: number }>(
    `SELECT extract(epoch FROM max((data->>'at')::timestamptz) - (SELECT min((data->>'startedAt')::timestamptz)
       FROM es_events WHERE position > $1 AND type = 'EmailSendingStarted')) AS seconds
     FROM es_events WHERE position > $1 AND type = 'EmailRecipientDelivered'`,
    [since],
  );
  const seconds = Number(rows[0]!.seconds);
  await arrivedAll(sink, before, MESSAGES);
  const messagesPerSec = round(MESSAGES / seconds);
  await emit({
    bench: 'emails-deliver.drain',
    messages: MESSAGES,
    acceptedPerSec: round(MESSAGES / acceptSeconds),
    seconds: round(seconds, 2),
    messagesPerSec,
    ...usage,
    ratio: round(messagesPerSec / floorPerSec, 2),
    target: '>= 500 messages/s with DKIM signing',
  });
  return system;
}

async function paced(system: System, client: pg.Client, sink: Sink, sender: Sender) {
  const total = PACED_PER_SECOND * PACED_SECONDS;
  note(`emails-deliver.paced: ${PACED_PER_SECOND}/s for ${PACED_SECONDS} s`);
  const before = await sink.count();
  const since = await headPosition(client);
  const started = Date.now();
  const sends: Promise<void>[] = [];
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / PACED_PER_SECOND;
    const wait = due - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    sends.push(accept(system, sender, MESSAGES + i));
  }
  await Promise.all(sends);
  await delivered(client, since, total);
  await arrivedAll(sink, before, total);
  const [p50, p99] = await latencies(client, since);
  const [startedP50, startedP99] = await latencies(client, since, 'EmailSendingStarted', 'startedAt');
  await emit({
    bench: 'emails-deliver.paced',
    messages: total,
    perSecond: PACED_PER_SECOND,
    eventTo250P50Ms: p50,
    eventTo250P99Ms: p99,
    // How much of it is the way to the worker (log follower, schedule, claim, bus) rather than SMTP.
    eventToStartedP50Ms: startedP50,
    eventToStartedP99Ms: startedP99,
  });
}

function rssSampler() {
  const samples: number[] = [process.memoryUsage.rss()];
  const timer = setInterval(() => samples.push(process.memoryUsage.rss()), 500);
  return {
    stop() {
      clearInterval(timer);
      samples.push(process.memoryUsage.rss());
      const at = (q: number) => mb(samples[Math.min(samples.length - 1, Math.floor(q * (samples.length - 1)))]!);
      return {
        rssStartMb: at(0),
        rssQuarterMb: at(0.25),
        rssHalfMb: at(0.5),
        rssThreeQuartersMb: at(0.75),
        rssEndMb: at(1),
        rssPeakMb: mb(Math.max(...samples)),
      };
    },
  };
}

const headPosition = async (client: pg.Client) =>
  Number((await client.query('SELECT coalesce(max(position), 0) AS p FROM es_events')).rows[0].p);

/** Waits until `count` deliveries after `since` are recorded; fails when none came for 30 s. */
async function delivered(client: pg.Client, since: number, count: number): Promise<void> {
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE type <> 'EmailRecipientDelivered')::int AS other
       FROM es_events WHERE position > $1 AND type LIKE 'EmailRecipient%'`,
      [since],
    );
    const { n, other } = rows[0] as { n: number; other: number };
    if (other > 0) throw new Error(`${other} answers other than delivered`);
    if (n >= count) return;
    if (n !== last) {
      last = n;
      lastChange = Date.now();
    } else if (Date.now() - lastChange > 30_000) throw new Error(`stuck at ${n} of ${count} delivered`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function arrivedAll(sink: Sink, before: { messages: number }, count: number): Promise<void> {
  const arrived = (await sink.count()).messages - before.messages;
  if (arrived !== count) throw new Error(`the sink got ${arrived} of ${count} messages`);
}

/** Event→250 of the deliveries after `since`: the acceptance's commit to the answer's time (or to another event's). */
async function latencies(
  client: pg.Client,
  since: number,
  type = 'EmailRecipientDelivered',
  field = 'at',
): Promise<number[]> {
  const { rows } = await client.query<{ ms: number }>(
    `SELECT extract(epoch FROM (d.data->>$3)::timestamptz - a.recorded_at) * 1000 AS ms
     FROM es_events d JOIN es_events a ON a.stream_id = d.stream_id AND a.revision = 0
     WHERE d.position > $1 AND d.type = $2`,
    [since, type, field],
  );
  return percentiles(
    rows.map((r) => Number(r.ms)),
    [50, 99],
  ).map((ms) => round(ms));
}
