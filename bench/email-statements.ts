/**
 * The PostgreSQL statements one `POST /emails` costs, counted rather than timed (issue 18):
 * `npx tsx bench/email-statements.ts [N]` (N: 50 by default).
 *
 * The service runs in this process as bench/server.ts opens it (`openSystem` + `serve`, default
 * options, a temporary data folder), with one workspace, one key of the http-floors bench's
 * scopes made through `POST /keys`, and its sending address put in the read model with SQL, as
 * http-floors does. It sends N messages of the bench's shape through `inject`, one at a time
 * (each followed by SETTLE_MS, 1,500 by default) or CONCURRENCY at a time, with an
 * Idempotency-Key each when IDEMPOTENT is set, and counts every statement `pg.Client#query` is
 * given, grouped by text, per message:
 *
 * - `request`: issued by the request's own async chain before its answer; their round trips
 *   (statements whose time in flight overlaps count as one) are the sequential ones;
 * - `after`: issued by the request's chain after its answer (work it left running);
 * - `other`: issued by the service's own loops (projectors, delivery, the bus) meanwhile and
 *   until SETTLE_MS after the last answer. One at a time these are exact per message (with the
 *   pollers of a SETTLE_MS window); at a time, they share batches as under load, and how much
 *   depends on the machine's speed.
 *
 * Not part of `npm run bench`: it asserts nothing and measures no time that matters.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem, serve } from '../system.ts';
import { bindPoolCallbacks, roundTrips, timeInFlight, watchStatements } from './statements.ts';
import { freshDatabase } from './support.ts';

const N = Number(process.argv[2] ?? 50);
const WARMUP = 5;
/** Requests in flight at once: 1 sends one at a time, each settled before the next. */
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 1);
const SETTLE_MS = Number(process.env.SETTLE_MS ?? 1500);

interface Flight {
  /** Until the answer; statements of the request's chain after it count as `after`. */
  answered: boolean;
  /** Times in flight of the request's own statements before the answer. */
  spans: [number, number][];
}

type Where = 'request' | 'after' | 'other';
const counts: Record<Where, Map<string, number>> = { request: new Map(), after: new Map(), other: new Map() };
let counting = false;
const chain = new AsyncLocalStorage<Flight>();

watchStatements((text) => {
  if (!counting) return undefined;
  const flight = chain.getStore();
  const where: Where = flight === undefined ? 'other' : flight.answered ? 'after' : 'request';
  counts[where].set(text, (counts[where].get(text) ?? 0) + 1);
  return where === 'request' ? timeInFlight(flight!.spans) : undefined;
});

bindPoolCallbacks();

const settle = () => new Promise((r) => setTimeout(r, SETTLE_MS));

async function main(): Promise<void> {
  const database = await freshDatabase('statements');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-statements-'));
  const system = await openSystem(database.url, { dataDir });
  const app = await serve(system);
  try {
    const ws = await createWorkspace(system.commands, { name: 'Statements', ownerEmail: 'owner@statements.test' });
    const made = await app.inject({
      method: 'POST',
      url: '/keys',
      headers: { authorization: `Bearer ${ws.apiKey}` },
      payload: { name: 'bench', scopes: ['settings:read', 'settings:write', 'emails:send'] },
    });
    const key = made.json().token as string;
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    await client.query(
      `INSERT INTO addresses (workspace_id, id, address, local_part, domain, domain_id, enabled, username, registered, created_at, updated_at)
       VALUES ($1, 'addr_000000000000000000000001', 'sender@ws0.bench.test', 'sender', 'ws0.bench.test',
               gen_random_uuid()::text, true, NULL, true, now(), now())`,
      [ws.workspaceId],
    );
    await client.end();

    const send = async (n: number) => {
      const flight: Flight = { answered: false, spans: [] };
      // inject's answer is a thenable that sends the request only once awaited: awaited in the run.
      const response = await chain.run(
        flight,
        async () =>
          await app.inject({
            method: 'POST',
            url: '/emails',
            headers: {
              authorization: `Bearer ${key}`,
              ...(process.env.IDEMPOTENT ? { 'idempotency-key': `k${n}` } : {}),
            },
            payload: {
              from: 'sender@ws0.bench.test',
              to: `r${n % 5000}@example.org`,
              subject: `Order ${n} confirmed`,
              text: `Hello,\n\nyour order ${n} is confirmed and will ship soon.\n\nThanks`,
              html: `<p>Hello,</p><p>your order <b>${n}</b> is confirmed and will ship soon.</p><p>Thanks</p>`,
            },
          }),
      );
      flight.answered = true;
      if (response.statusCode !== 201)
        throw new Error(`POST /emails answered ${response.statusCode}: ${response.body}`);
      if (CONCURRENCY === 1) await settle();
      return flight;
    };

    for (let n = 0; n < WARMUP; n++) await send(n);
    await settle();
    counting = true;
    const trips: number[] = [];
    let next = WARMUP;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < WARMUP + N) trips.push(roundTrips((await send(next++)).spans));
      }),
    );
    await settle();
    counting = false;

    const per = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0) / N;
    console.log(`${N} x POST /emails, ${CONCURRENCY} at a time, statements per request:`);
    for (const where of ['request', 'after', 'other'] as const) {
      console.log(`\n${where}: ${per(counts[where]).toFixed(2)}`);
      for (const [text, count] of [...counts[where]].sort((a, b) => b[1] - a[1]))
        console.log(`  ${(count / N).toFixed(2).padStart(6)}  ${text}`);
    }
    const sorted = [...trips].sort((a, b) => a - b);
    console.log(
      `\nsequential round trips of the request before its answer: mean ${(trips.reduce((a, b) => a + b, 0) / N).toFixed(2)}, ` +
        `min ${sorted[0]}, median ${sorted[Math.floor(N / 2)]}, max ${sorted.at(-1)}`,
    );
  } finally {
    await app.close();
    await system.close();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
