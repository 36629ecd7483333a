/**
 * The service as its own process for the HTTP benchmarks, so the load generator does not share
 * the server's event loop: `openSystem` + `serve` + `listen` on 127.0.0.1:0, exactly as main.ts.
 * Forked by bench/support.ts (startServer); talks to its parent over IPC.
 */
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem, serve, type SystemOptions } from '../system.ts';

export type ServerRequest = { type: 'close' } | { type: 'cpu' };
export type ServerReply =
  | { type: 'ready'; port: number; openedAt: number; workspaces: { workspaceId: string; apiKey: string }[] }
  | { type: 'cpu'; cpuSeconds: number }
  | { type: 'closed'; cpuSeconds: number }
  | { type: 'failed'; error: string };

const send = (m: ServerReply) => process.send!(m);

async function main(): Promise<void> {
  const [url, workspaces, options] = process.argv.slice(2);
  const openedAt = Date.now();
  const cpu = process.cpuUsage();
  const system = await openSystem(url!, JSON.parse(options ?? '{}') as SystemOptions);
  const app = await serve(system);
  const created = [];
  for (let i = 0; i < Number(workspaces ?? 0); i++) {
    const ws = await createWorkspace(system.commands, { name: `Bench ${i}`, ownerEmail: `owner${i}@bench.test` });
    created.push({ workspaceId: ws.workspaceId, apiKey: ws.apiKey });
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  send({
    type: 'ready',
    port: typeof address === 'object' && address ? address.port : 0,
    openedAt,
    workspaces: created,
  });
  const cpuSeconds = () => {
    const used = process.cpuUsage(cpu);
    return (used.user + used.system) / 1e6;
  };
  process.on('message', async (m: ServerRequest) => {
    if (m.type === 'cpu') return send({ type: 'cpu', cpuSeconds: cpuSeconds() });
    await app.close();
    await system.close();
    send({ type: 'closed', cpuSeconds: cpuSeconds() });
    process.disconnect();
  });
}

main().catch((error) => {
  send({ type: 'failed', error: String(error?.stack ?? error) });
  process.exit(1);
});
