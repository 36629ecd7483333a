import net from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

type Teardown = { teardown(fn: () => Promise<void> | void): void };

/** A refusal: smtp-server answers `<code> <message>`. */
export interface Refusal {
  code: number;
  message: string;
}

export interface MxBehaviour {
  /** Offer STARTTLS (smtp-server's own self-signed certificate). */
  starttls?: boolean;
  /** Refuse a recipient (RCPT TO); `n` counts RCPT commands from 1. */
  rcpt?: (address: string, n: number) => Refusal | null;
  /** Answer the message's end with a refusal; `n` counts messages from 1. */
  data?: (n: number) => Refusal | null;
  /** Wait this long before answering the message's end. */
  dataDelayMs?: number;
  /** Require AUTH with these credentials (allowed without TLS: this is loopback). */
  auth?: { user: string; pass: string };
}

export interface Received {
  mailFrom: string;
  rcptTo: string[];
  raw: Buffer;
  secure: boolean;
  user: string | undefined;
}

export interface MxServer {
  address: string;
  received: Received[];
  /** TCP connections accepted so far. */
  connections(): number;
  /** The most connections that were open at one time. */
  peakConnections(): number;
  /** Connections open now. */
  openConnections(): number;
}

/**
 * smtp-server on `address` (a loopback address) and `port`, keeping what it accepts, refusing
 * what `behaviour` says. Several such servers share one port on different loopback addresses,
 * as MX hosts share port 25 on different hosts.
 */
export async function startMxServer(
  t: Teardown,
  address: string,
  port: number,
  behaviour: MxBehaviour = {},
): Promise<MxServer> {
  const received: Received[] = [];
  let rcpts = 0;
  let messages = 0;
  let open = 0;
  let peak = 0;
  let total = 0;
  const timers = new Set<NodeJS.Timeout>();
  const options: SMTPServerOptions = {
    logger: false,
    // Teardown does not wait for clients that keep idle sessions (the sender under test may close later).
    closeTimeout: 200,
    disabledCommands: [...(behaviour.starttls ? [] : ['STARTTLS']), ...(behaviour.auth ? [] : ['AUTH'])],
    authOptional: !behaviour.auth,
    allowInsecureAuth: true,
    onConnect(_session, callback) {
      total++;
      peak = Math.max(peak, ++open);
      callback();
    },
    onClose() {
      open--;
    },
    onAuth(auth, _session, callback) {
      if (behaviour.auth && auth.username === behaviour.auth.user && auth.password === behaviour.auth.pass)
        return callback(null, { user: auth.username });
      callback(Object.assign(new Error('Invalid credentials'), { responseCode: 535 }));
    },
    onRcptTo(rcpt, _session, callback) {
      const refusal = behaviour.rcpt?.(rcpt.address, ++rcpts);
      if (refusal) return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const refusal = behaviour.data?.(++messages);
        const answer = () => {
          if (refusal) return callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
          received.push({
            mailFrom: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
            rcptTo: session.envelope.rcptTo.map((r) => r.address),
            raw: Buffer.concat(chunks),
            secure: session.secure,
            user: session.user as string | undefined,
          });
          callback();
        };
        if (!behaviour.dataDelayMs) return answer();
        const timer = setTimeout(() => {
          timers.delete(timer);
          answer();
        }, behaviour.dataDelayMs);
        timers.add(timer);
      });
    },
  };
  const server = new SMTPServer(options);
  server.on('error', () => {});
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(port, address, () => resolve());
  });
  t.teardown(async () => {
    for (const timer of timers) clearTimeout(timer);
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { address, received, connections: () => total, peakConnections: () => peak, openConnections: () => open };
}

/** A TCP server that accepts connections and never says a word (no greeting). */
export async function startSilentServer(
  t: Teardown,
  address: string,
  port: number,
): Promise<{ connections(): number }> {
  const sockets = new Set<net.Socket>();
  let total = 0;
  const server = net.createServer((socket) => {
    total++;
    sockets.add(socket);
    socket.on('error', () => {});
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => resolve());
  });
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { connections: () => total };
}

/**
 * A port free on every one of `addresses` (loopback addresses), for servers that must share it.
 * Found by binding each in turn; the probes are closed before it is returned, so a caller racing
 * other processes retries on EADDRINUSE.
 */
export async function sharedFreePort(addresses: string[]): Promise<number> {
  for (let attempt = 0; attempt < 20; attempt++) {
    const probes: net.Server[] = [];
    try {
      let port = 0;
      for (const address of addresses) {
        const probe = net.createServer();
        probes.push(probe);
        await new Promise<void>((resolve, reject) => {
          probe.once('error', reject);
          probe.listen(port, address, () => resolve());
        });
        port = (probe.address() as net.AddressInfo).port;
      }
      return port;
    } catch {
      // The port the first address got is taken on another: the next attempt starts over.
    } finally {
      await Promise.all(
        probes.map((p) => new Promise<void>((resolve) => (p.listening ? p.close(() => resolve()) : resolve()))),
      );
    }
  }
  throw new Error(`no port free on all of ${addresses.join(', ')}`);
}
