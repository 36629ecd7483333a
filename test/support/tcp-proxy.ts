import net from 'node:net';

export interface TcpProxy {
  /** Where clients connect instead of the target. */
  port: number;
  /** An outage: open connections are cut and new ones refused, until `restore`. */
  cut(): Promise<void>;
  /**
   * An outage a test can see the client try to end: open connections are cut, and each new one is
   * reset as it arrives (ECONNRESET, not ECONNREFUSED) and counted in `resets`, until `restore`.
   */
  cutCounting(): Promise<void>;
  /** Connections reset since the last `cutCounting`. */
  readonly resets: number;
  restore(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A loopback TCP relay to a real server (NATS here), so a test can take the server away from the
 * service and give it back without stopping the server other tests share.
 */
export async function startTcpProxy(targetHost: string, targetPort: number): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let resetting = false;
  let resets = 0;
  const track = (s: net.Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    if (resetting) {
      resets++;
      client.on('error', () => {});
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(targetPort, targetHost);
    track(client);
    track(upstream);
    client.pipe(upstream).pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => {
        server.off('error', reject);
        resolve((server.address() as net.AddressInfo).port);
      });
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      if (!server.listening) return resolve();
      server.close(() => resolve());
    });
  const port = await listen(0);
  return {
    port,
    cut: stop,
    async cutCounting() {
      resetting = true;
      resets = 0;
      for (const s of sockets) s.destroy();
    },
    get resets() {
      return resets;
    },
    async restore() {
      resetting = false;
      if (!server.listening) await listen(port);
    },
    close: stop,
  };
}
