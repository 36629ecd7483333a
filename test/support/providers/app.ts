import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ProviderConfig } from '../../../infra/providers/select.ts';
import { startTestApp, type TestApp } from '../app.ts';
import { forkService } from '../fork-service.ts';
import { eventually } from '../receiver.ts';

/**
 * The service with provider imports pointed at loopback providers (`baseUrls`), its process's
 * pauses and a provider's export polls shortened; `settled` waits for an import to end, `suppression` reads one by address.
 */
export async function startProviderImportsApp(
  t: { teardown(fn: () => Promise<void> | void): void },
  baseUrls: ProviderConfig['baseUrls'],
): Promise<{
  h: TestApp;
  settled: (key: string, id: string) => Promise<any>;
  suppression: (key: string, email: string) => Promise<any>;
}> {
  const h = await startTestApp(t, {
    providerImports: {
      baseUrls,
      allowPrivate: true,
      pollMs: 20,
      retryBaseMs: 50,
      retryMaxMs: 2000,
      exportPollMs: 20,
    },
  });
  const settled = (key: string, id: string) =>
    eventually(async () => {
      const got = (await h.request(key, 'GET', `/provider-imports/${id}`)).json();
      return ['completed', 'failed', 'cancelled'].includes(got.status) ? got : null;
    }, 180_000);
  const suppression = async (key: string, email: string) =>
    (await h.request(key, 'GET', `/suppressions?q=${encodeURIComponent(email)}`)).json().data[0];
  return { h, settled, suppression };
}

/**
 * For a test that kills the process running an import and resumes it in another: this process
 * serves the api and reads; `fork` starts the service in a child (killed at teardown) that runs
 * the imports; `contactsMade` counts the workspace's ContactCreated events in the store.
 */
export async function startResumableImports(
  t: { teardown(fn: () => Promise<void> | void): void },
  baseUrls: ProviderConfig['baseUrls'],
): Promise<{
  h: TestApp;
  ws: { workspaceId: string; apiKey: string };
  contactsMade: () => Promise<number>;
  fork: () => Promise<ChildProcess>;
  completed: (id: string, timeoutMs?: number) => Promise<any>;
}> {
  const providerImports = { baseUrls, allowPrivate: true, pollMs: 20, exportPollMs: 20 };
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-provider-import-'));
  await chmod(dataDir, 0o755);
  t.teardown(() => rm(dataDir, { recursive: true, force: true }));
  const h = await startTestApp(t, { deliver: false, dataDir, providerImports });
  const ws = await h.workspace();
  const contactsMade = async () =>
    Number(
      (
        await h.system.database.pool.query(
          "SELECT count(*) AS n FROM es_events WHERE type = 'ContactCreated' AND metadata->>'workspaceId' = $1",
          [ws.workspaceId],
        )
      ).rows[0].n,
    );
  const fork = async () => {
    const { child, ready } = forkService(h.url, { dataDir, poolSize: 8, providerImports });
    t.teardown(() => void child.kill('SIGKILL'));
    await ready;
    return child;
  };
  const completed = (id: string, timeoutMs = 240_000) =>
    eventually(async () => {
      const got = (await h.request(ws.apiKey, 'GET', `/provider-imports/${id}`)).json();
      return got.status === 'completed' ? got : null;
    }, timeoutMs);
  return { h, ws, contactsMade, fork, completed };
}
