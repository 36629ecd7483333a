/**
 * The IPC protocol of a benchmarked server in a process of its own (bench/server.ts, the service;
 * bench/floor-server.ts, its floor), and the part both run: listen on 127.0.0.1:0, say `ready`,
 * answer `cpu` with the process's CPU seconds since it started, and on `close` close and say
 * `closed`. Forked and spoken to by bench/support.ts (startServer).
 */
import type { FastifyInstance } from 'fastify';

export type ServerRequest = { type: 'close' } | { type: 'cpu' };
export type ServerReply =
  | { type: 'ready'; port: number; openedAt: number; workspaces: { workspaceId: string; apiKey: string }[] }
  | { type: 'cpu'; cpuSeconds: number }
  | { type: 'closed'; cpuSeconds: number }
  | { type: 'failed'; error: string };

export interface Started {
  app: FastifyInstance;
  workspaces: { workspaceId: string; apiKey: string }[];
  /** Closes what `start` opened, after the app. */
  close(): Promise<void>;
}

const send = (m: ServerReply) => process.send!(m);

export function runBenchServer(start: () => Promise<Started>): void {
  const openedAt = Date.now();
  const cpu = process.cpuUsage();
  const cpuSeconds = () => {
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / 1e6;
  };
  const run = async () => {
    const { app, workspaces, close } = await start();
    await app.listen({ host: '127.0.0.1', port: 0 });
    const address = app.server.address();
    send({ type: 'ready', port: typeof address === 'object' && address ? address.port : 0, openedAt, workspaces });
    process.on('message', async (m: ServerRequest) => {
      if (m.type === 'cpu') return send({ type: 'cpu', cpuSeconds: cpuSeconds() });
      await app.close();
      await close();
      send({ type: 'closed', cpuSeconds: cpuSeconds() });
      process.disconnect();
    });
  };
  run().catch((error) => {
    send({ type: 'failed', error: String(error?.stack ?? error) });
    process.exit(1);
  });
}
