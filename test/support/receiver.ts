import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  path: string;
  headers: Record<string, string>;
  body: string;
  at: number;
}

export type Answer = { status: number; headers?: Record<string, string>; body?: string; holdMs?: number };

/**
 * A webhook receiver on loopback: records every request and answers with what `answer` says for
 * it (by default 200). `waitFor(n)` resolves once n requests have arrived.
 */
export async function startReceiver(
  t: { teardown(fn: () => Promise<void> | void): void },
  answer: (r: Received, n: number) => Answer = () => ({ status: 200 }),
) {
  const received: Received[] = [];
  const waiters: { n: number; resolve: () => void }[] = [];
  const holds = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r: Received = {
        path: req.url ?? '/',
        headers: Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)])),
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      received.push(r);
      const a = receiver.answer(r, received.length);
      const reply = () => {
        if (res.destroyed) return;
        res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers });
        res.end(a.body ?? `answered ${a.status}`);
      };
      if (a.holdMs) {
        const hold = setTimeout(() => {
          holds.delete(hold);
          reply();
        }, a.holdMs);
        holds.add(hold);
      } else reply();
      for (const w of [...waiters]) {
        if (received.length >= w.n) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const hold of holds) clearTimeout(hold);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const receiver = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answer,
    waitFor(n: number, timeoutMs = 15_000): Promise<void> {
      if (received.length >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`receiver got ${received.length} of ${n} requests`)),
          timeoutMs,
        );
        waiters.push({
          n,
          resolve: () => {
            clearTimeout(timer);
            resolve();
          },
        });
      });
    },
  };
  return receiver;
}

/**
 * Polls until `check` holds (deliveries happen in the background): soon at first, then less often
 * (10 ms growing to 100 ms), since each check is a request through the whole service and a long
 * wait checked every 25 ms took CPU from the test file running beside it.
 */
export async function eventually<T>(
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (let pause = 10; ; pause = Math.min(100, pause * 1.5)) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, pause));
  }
}
