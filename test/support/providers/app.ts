import type { ProviderConfig } from '../../../infra/providers/select.ts';
import { startTestApp, type TestApp } from '../app.ts';
import { eventually } from '../receiver.ts';

/**
 * The service with provider imports pointed at loopback providers (`baseUrls`), its process's
 * pauses shortened; `settled` waits for an import to end, `suppression` reads one by address.
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
    providerImports: { baseUrls, allowPrivate: true, pollMs: 20, retryBaseMs: 50, retryMaxMs: 2000 },
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
