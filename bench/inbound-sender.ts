/**
 * The sending side of the inbound benchmark, in its own process so it does not share the event
 * loop of the server under test: builds N DKIM-signed messages of sender.example.com up front,
 * then sends them over nodemailer's pooled SMTP transport, IN_FLIGHT at a time over SESSIONS
 * connections, timing each from the start of its hand-over to the server's 250 (so DATA to 250
 * is inside it). Forked by bench/inbound.ts; talks to its parent over IPC.
 */
import { createTransport } from 'nodemailer';
import { inboundMessage } from './inbound-mail.ts';
import { concurrently, msSince, Samples } from './support.ts';

export type SenderRequest =
  | { type: 'prepare'; messages: number; privateKeyPem: string; domain: string; selector: string }
  | { type: 'send'; port: number; inFlight: number; sessions: number }
  | { type: 'close' };
export type SenderReply =
  | { type: 'prepared'; avgBytes: number }
  | { type: 'sent'; seconds: number; p50Ms: number; p99Ms: number; failed: number; firstError: string | null }
  | { type: 'closed' };

const send = (m: SenderReply) => process.send!(m);
let prepared: Buffer[] = [];

async function prepare(m: Extract<SenderRequest, { type: 'prepare' }>) {
  prepared = [];
  const stamp = Date.now();
  for (let i = 0; i < m.messages; i++)
    prepared.push(
      await inboundMessage(i, { domain: m.domain, selector: m.selector, privateKeyPem: m.privateKeyPem }, stamp),
    );
  send({ type: 'prepared', avgBytes: Math.round(prepared.reduce((n, b) => n + b.length, 0) / prepared.length) });
}

async function run(m: Extract<SenderRequest, { type: 'send' }>) {
  const transport = createTransport({
    pool: true,
    host: '127.0.0.1',
    port: m.port,
    maxConnections: m.sessions,
    maxMessages: Infinity,
    ignoreTLS: true,
  });
  const latency = new Samples(prepared.length);
  let failed = 0;
  let firstError: string | null = null;
  let next = 0;
  const started = process.hrtime.bigint();
  await concurrently(m.inFlight, async () => {
    for (let i = next++; i < prepared.length; i = next++) {
      const t0 = process.hrtime.bigint();
      try {
        await transport.sendMail({
          envelope: { from: 'carol@sender.example.com', to: ['ann@ours.example.com'] },
          raw: prepared[i]!,
        });
        latency.add(msSince(t0));
      } catch (error) {
        failed++;
        firstError ??= (error as Error).message;
      }
    }
  });
  const seconds = msSince(started) / 1000;
  transport.close();
  const [p50Ms = 0, p99Ms = 0] = latency.percentiles([50, 99]);
  send({ type: 'sent', seconds, p50Ms, p99Ms, failed, firstError });
}

process.on('message', (m: SenderRequest) => {
  if (m.type === 'prepare') void prepare(m);
  if (m.type === 'send') void run(m);
  if (m.type === 'close') {
    send({ type: 'closed' });
    process.exit(0);
  }
});
