/**
 * The sending side of the inbound benchmark, in its own process so it does not share the event
 * loop of the server under test: builds N DKIM-signed messages of sender.example.com up front,
 * then sends them over nodemailer's pooled SMTP transport, IN_FLIGHT at a time over SESSIONS
 * connections, timing each from the start of its hand-over to the server's 250 (so DATA to 250
 * is inside it). Forked by bench/inbound.ts; talks to its parent over IPC.
 */
import MailComposer from 'nodemailer/lib/mail-composer';
import { createTransport } from 'nodemailer';
import { signMessage } from '../infra/outbound/dkim.ts';
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

const paragraph = 'Thanks for the quick reply. Here are the notes from the call, with the open points below. '.repeat(
  8,
);

async function prepare(m: Extract<SenderRequest, { type: 'prepare' }>) {
  prepared = [];
  for (let i = 0; i < m.messages; i++) {
    const raw = await new MailComposer({
      from: `Carol Sender <carol@${m.domain}>`,
      to: 'Ann <ann@ours.example.com>',
      subject: `Re: Notes from the call #${i}`,
      messageId: `<n${i}-${Date.now()}@${m.domain}>`,
      inReplyTo: `<n${i - 1}@${m.domain}>`,
      date: new Date(),
      text: `${paragraph}\n\nItem ${i}\n`,
      html: `<p>${paragraph}</p><p>Item ${i}</p>`,
      attachments: i % 10 === 0 ? [{ filename: 'notes.txt', content: `notes ${i}\n`.repeat(200) }] : [],
    })
      .compile()
      .build();
    prepared.push(await signMessage(raw, { domain: m.domain, selector: m.selector, privateKeyPem: m.privateKeyPem }));
  }
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
