/**
 * The recipients' side of the outbound benchmark, in its own process so it does not share the
 * sender's event loop: an smtp-server that reads and discards every message (a sink MX), and the
 * loopback DNS server publishing `example.org MX mx.example.org`, `mx.example.org A 127.0.0.1`.
 * Forked by bench/outbound.ts; talks to its parent over IPC.
 */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { startDnsServer } from '../test/support/dns-server.ts';

export type SinkRequest = { type: 'count' } | { type: 'close' };
export type SinkReply =
  | { type: 'ready'; smtpPort: number; dnsAddress: string }
  | { type: 'count'; messages: number; bytes: number }
  | { type: 'closed' };

const send = (m: SinkReply) => process.send!(m);

async function main(): Promise<void> {
  const teardown: (() => Promise<void> | void)[] = [];
  const dns = await startDnsServer({ teardown: (fn) => teardown.push(fn) });
  dns.set('example.org', { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: ['127.0.0.1'] });

  let messages = 0;
  let bytes = 0;
  const sink = new SMTPServer({
    logger: false,
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    size: 50 * 1024 * 1024,
    closeTimeout: 500,
    onData(stream, _session, callback) {
      stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
      stream.on('end', () => {
        messages++;
        callback();
      });
    },
  });
  sink.on('error', () => {});
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));

  process.on('message', (m: SinkRequest) => {
    if (m.type === 'count') send({ type: 'count', messages, bytes });
    if (m.type === 'close') {
      sink.close(async () => {
        for (const fn of teardown.reverse()) await fn();
        send({ type: 'closed' });
        process.exit(0);
      });
    }
  });
  send({ type: 'ready', smtpPort: (sink.server.address() as AddressInfo).port, dnsAddress: dns.address });
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
