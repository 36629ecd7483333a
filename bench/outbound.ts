/**
 * Outbound delivery: N messages (OUTBOUND_MESSAGES, default 20,000) to a sink MX on loopback,
 * OUTBOUND_IN_FLIGHT (default 100) at a time, each to its own recipient at example.org. The sink
 * and the loopback DNS server run in a child process (bench/outbound-sink.ts), so this process
 * holds only the sender. Three runs over the same messages and the same sink, in this order:
 *
 *   outbound.nodemailer        nodemailer alone: pooled SMTP transport, composes and sends (the floor)
 *   outbound.nodemailer-dkim   the same with the transport's DKIM option (the key as PEM, as documented)
 *   outbound.direct            ours: composeMessage + signMessage (nodemailer's signer, parsed key) + DirectDelivery
 *                              (MX and address lookups through the DNS port and its delivery cache, as
 *                              openDelivery wires it; sessions reused per MX host)
 *
 * Each figure: messages/s, per-message latency p50/p99 (from the start of its compose to the
 * 250), RSS before, at its peak and after. Both sides keep at most 10 sessions to the sink (our
 * per-host limit). `ratio` on the direct line is its messages/s over the nodemailer floor's.
 */
import { fork } from 'node:child_process';
import { createTransport } from 'nodemailer';
import { generateDkimKeyPair } from '../infra/dkim/keys.ts';
import { CachedDns } from '../infra/dns/cache.ts';
import { NodeDns } from '../infra/dns/resolver.ts';
import { composeMessage, newMessageId, type OutgoingMessage } from '../infra/outbound/compose.ts';
import { DIRECT_DEFAULTS, DirectDelivery } from '../infra/outbound/direct.ts';
import { signMessage } from '../infra/outbound/dkim.ts';
import type { SinkReply, SinkRequest } from './outbound-sink.ts';
import { besideBench, concurrently, emit, msSince, note, round, Samples } from './support.ts';

const MESSAGES = Number(process.env.OUTBOUND_MESSAGES ?? 20_000);
const IN_FLIGHT = Number(process.env.OUTBOUND_IN_FLIGHT ?? 100);
const CONNECTIONS = DIRECT_DEFAULTS.maxConnectionsPerHost;
export const DOMAIN = 'sender.example.com';
const SELECTOR = 'wms202611';
const RETURN_PATH = `bounce@bounces.${DOMAIN}`;

const paragraph = 'Thank you for your order. Your receipt is below; keep it for your records. '.repeat(6);
const html = `<!doctype html><html><body><table width="100%">${Array.from({ length: 12 }, (_, i) => `<tr><td style="padding:8px">Line ${i + 1}</td><td align="right">€ ${(i * 3.5).toFixed(2)}</td></tr>`).join('')}</table><p>${paragraph}</p></body></html>`;

/** A transactional message of about 4 KB: text and html, one-click unsubscribe, a custom header. */
export function message(i: number): OutgoingMessage {
  return {
    messageId: newMessageId(DOMAIN),
    date: new Date(),
    from: { address: `receipts@${DOMAIN}`, name: 'Sender Receipts' },
    to: [{ address: `user${i}@example.org`, name: `User ${i}` }],
    subject: `Your receipt #${i} — thank you`,
    text: `${paragraph}\n\nReceipt #${i}\n`,
    html,
    headers: { 'X-Entity-Ref-ID': `order-${i}` },
    listUnsubscribe: { url: `https://${DOMAIN}/unsubscribe/${i}` },
  };
}

/** The same message as nodemailer's mail options. */
function asNodemailer(m: OutgoingMessage) {
  return {
    messageId: m.messageId,
    date: m.date,
    from: m.from,
    to: m.to,
    subject: m.subject,
    text: m.text,
    html: m.html,
    headers: { ...m.headers, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' },
    list: { unsubscribe: m.listUnsubscribe!.url },
    envelope: { from: RETURN_PATH, to: m.to.map((a) => a.address) },
    xMailer: false as const,
  };
}

export async function outboundBench(): Promise<void> {
  const sink = await startSink();
  try {
    const key = await generateDkimKeyPair();
    note(`outbound: ${MESSAGES} messages per run, ${IN_FLIGHT} in flight, ${CONNECTIONS} sessions to the sink`);

    const floorTransport = createTransport({
      pool: true,
      host: '127.0.0.1',
      port: sink.smtpPort,
      maxConnections: CONNECTIONS,
      maxMessages: Infinity,
      ignoreTLS: true,
    });
    const floor = await run('outbound.nodemailer', sink, async (i) => {
      await floorTransport.sendMail(asNodemailer(message(i)));
    });
    floorTransport.close();

    const dkimTransport = createTransport({
      pool: true,
      host: '127.0.0.1',
      port: sink.smtpPort,
      maxConnections: CONNECTIONS,
      maxMessages: Infinity,
      ignoreTLS: true,
      dkim: { domainName: DOMAIN, keySelector: SELECTOR, privateKey: key.privateKeyPem },
    });
    await run('outbound.nodemailer-dkim', sink, async (i) => {
      await dkimTransport.sendMail(asNodemailer(message(i)));
    });
    dkimTransport.close();

    const delivery = new DirectDelivery({
      dns: new CachedDns(new NodeDns({ servers: [sink.dnsAddress] })),
      heloName: 'bench.sender.test',
      port: sink.smtpPort,
      allowPrivateAddresses: true,
      maxConnectionsPerHost: CONNECTIONS,
    });
    const signingKey = { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem };
    await run(
      'outbound.direct',
      sink,
      async (i) => {
        const { raw, recipients } = await composeMessage(message(i));
        const signed = await signMessage(raw, signingKey);
        const outcomes = await delivery.deliver({ mailFrom: RETURN_PATH, recipients, raw: signed });
        const failed = outcomes.find((o) => o.status !== 'delivered');
        if (failed) throw new Error(`not delivered: ${JSON.stringify(failed)}`);
      },
      floor.messagesPerSec,
    );
    await delivery.close();
  } finally {
    await sink.close();
  }
}

async function run(bench: string, sink: Sink, send: (i: number) => Promise<void>, floorPerSec?: number) {
  note(`${bench}: sending`);
  const before = await sink.count();
  const latency = new Samples(MESSAGES);
  const rssStart = process.memoryUsage.rss();
  let rssPeak = rssStart;
  const sampler = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage.rss())), 100);
  let next = 0;
  const started = process.hrtime.bigint();
  try {
    await concurrently(IN_FLIGHT, async () => {
      for (let i = next++; i < MESSAGES; i = next++) await latency.time(() => send(i));
    });
  } finally {
    clearInterval(sampler);
  }
  const seconds = msSince(started) / 1000;
  const rssEnd = process.memoryUsage.rss();
  const after = await sink.count();
  const arrived = after.messages - before.messages;
  if (arrived !== MESSAGES) throw new Error(`${bench}: the sink got ${arrived} of ${MESSAGES} messages`);
  const [p50, p99] = latency.percentiles([50, 99]);
  const messagesPerSec = round(MESSAGES / seconds);
  const mb = (bytes: number) => round(bytes / 1024 / 1024);
  await emit({
    bench,
    messages: MESSAGES,
    inFlight: IN_FLIGHT,
    sessions: CONNECTIONS,
    seconds: round(seconds, 2),
    messagesPerSec,
    p50Ms: p50,
    p99Ms: p99,
    avgMessageBytes: Math.round((after.bytes - before.bytes) / arrived),
    rssStartMb: mb(rssStart),
    rssPeakMb: mb(rssPeak),
    rssEndMb: mb(rssEnd),
    ...(floorPerSec
      ? { ratio: round(messagesPerSec / floorPerSec, 2), target: '>= 500 messages/s with DKIM signing' }
      : {}),
  });
  return { messagesPerSec };
}

export interface Sink {
  smtpPort: number;
  dnsAddress: string;
  count(): Promise<{ messages: number; bytes: number }>;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  const child = fork(besideBench('outbound-sink'), [], {
    stdio: ['ignore', 2, 2, 'ipc'],
  });
  const reply = <T extends SinkReply['type']>(type: T) =>
    new Promise<Extract<SinkReply, { type: T }>>((resolve, reject) => {
      const onMessage = (m: SinkReply) => {
        if (m.type !== type) return;
        child.off('exit', onExit);
        child.off('message', onMessage);
        resolve(m as Extract<SinkReply, { type: T }>);
      };
      const onExit = (code: number | null) => {
        child.off('message', onMessage);
        reject(new Error(`the outbound sink exited (${code}) before '${type}'`));
      };
      child.on('message', onMessage);
      child.once('exit', onExit);
    });
  const ready = await reply('ready');
  return {
    smtpPort: ready.smtpPort,
    dnsAddress: ready.dnsAddress,
    count: async () => {
      const answer = reply('count');
      child.send({ type: 'count' } satisfies SinkRequest);
      const { messages, bytes } = await answer;
      return { messages, bytes };
    },
    close: async () => {
      const closed = reply('closed');
      child.send({ type: 'close' } satisfies SinkRequest);
      await closed;
    },
  };
}
