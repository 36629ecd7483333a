/**
 * The service as its own process for the HTTP benchmarks, so the load generator does not share
 * the server's event loop: `openSystem` + `serve` + `listen` on 127.0.0.1:0, exactly as main.ts,
 * with main.ts's default heap growth (infra/heap.ts).
 * Forked by bench/support.ts (startServer); talks to its parent over IPC (bench/child.ts).
 */
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { boundHeapGrowth } from '../infra/heap.ts';
import { openSystem, serve, type SystemOptions } from '../system.ts';
import { runBenchServer } from './child.ts';

boundHeapGrowth();
runBenchServer(async () => {
  const [url, workspaces, options] = process.argv.slice(2);
  const system = await openSystem(url!, JSON.parse(options ?? '{}') as SystemOptions);
  const app = await serve(system);
  const created = [];
  for (let i = 0; i < Number(workspaces ?? 0); i++) {
    const ws = await createWorkspace(system.commands, { name: `Bench ${i}`, ownerEmail: `owner${i}@bench.test` });
    created.push({ workspaceId: ws.workspaceId, apiKey: ws.apiKey });
  }
  return { app, workspaces: created, close: () => system.close() };
});
