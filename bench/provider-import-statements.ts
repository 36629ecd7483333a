/**
 * The PostgreSQL statements a provider import costs per row, counted rather than timed (issue 22):
 * `npx tsx bench/provider-import-statements.ts [contacts] [suppressions]` (2,000 and 500 by
 * default).
 *
 * The service runs in this process as bench/server.ts opens it (`openSystem` + `serve`), with the
 * loopback Brevo of the tests in this process too, seeded with that many contacts and blocked
 * addresses and its three lists. One import of suppressions, audiences and contacts goes through
 * the real path (`POST /provider-imports`, the process manager, its pages and checkpoints), and
 * every statement `pg.Client#query` is given from the request until the import has completed is
 * counted, grouped by text, with the rows each `es_append` call carried. Statements of the
 * projectors are in the count: a page waits for them.
 *
 * Not part of `npm run bench`: it asserts nothing and measures no time that matters.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem, serve } from '../system.ts';
import { BREVO_KEYS, brevoData, startBrevoServer } from '../test/support/providers/brevo.ts';
import { TEST_SECRETS_KEY } from '../test/support/secrets.ts';
import { watchStatements } from './statements.ts';
import { ADMIN_URL, cpuSecondsOf, freshDatabase } from './support.ts';

const CONTACTS = Number(process.argv[2] ?? 2000);
const SUPPRESSIONS = Number(process.argv[3] ?? 500);

const counts = new Map<string, number>();
/** Milliseconds in flight per text, summed (statements in flight together each count theirs). */
const inFlight = new Map<string, number>();
let counting = false;
let appendCalls = 0;
let appendedStreams = 0;

/** The script's own client, which watches for the import's end: not counted. */
let watcher: pg.Client | null = null;
watchStatements((text, args, client) => {
  if (!counting || client === watcher) return undefined;
  counts.set(text, (counts.get(text) ?? 0) + 1);
  if (text.includes('es_append(')) {
    appendCalls++;
    appendedStreams += ((args[0] as { values: unknown[][] }).values[0] ?? []).length;
  }
  const start = performance.now();
  return () => inFlight.set(text, (inFlight.get(text) ?? 0) + performance.now() - start);
});

async function main(): Promise<void> {
  const teardowns: (() => Promise<void> | void)[] = [];
  const brevo = await startBrevoServer({ teardown: (fn) => teardowns.push(fn) }, brevoData(CONTACTS, SUPPRESSIONS));
  const database = await freshDatabase('pi_statements');
  if (process.env.LOG_DURATIONS) {
    // Each statement's time in the server, in PostgreSQL's own log (read by the operator).
    const admin = new pg.Client({ connectionString: ADMIN_URL });
    await admin.connect();
    await admin.query(`ALTER DATABASE ${database.name} SET log_min_duration_statement = 0`);
    await admin.end();
    console.log(`logging every statement's duration of ${database.name}`);
  }
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-pi-statements-'));
  const system = await openSystem(database.url, {
    dataDir,
    secretsKey: TEST_SECRETS_KEY,
    providerImports: { baseUrls: { brevo: `${brevo.url}/v3` }, allowPrivate: true },
  });
  const app = await serve(system);
  try {
    const ws = await createWorkspace(system.commands, { name: 'Statements', ownerEmail: 'owner@statements.test' });
    const headers = { authorization: `Bearer ${ws.apiKey}` };
    // CPU seconds rather than wall time: the machine is shared, and what a row costs is CPU.
    watcher = new pg.Client({ connectionString: database.url });
    await watcher.connect();
    const backendsCpu = async () => {
      const { rows } = await watcher!.query('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
      return rows.reduce((sum, r) => sum + cpuSecondsOf(r.pid), 0);
    };
    const serverCpuBefore = await backendsCpu();
    const nodeCpuBefore = (process.cpuUsage().user + process.cpuUsage().system) / 1e6;
    counting = true;
    const started = performance.now();
    const res = await app.inject({
      method: 'POST',
      url: '/provider-imports',
      headers,
      payload: { provider: 'brevo', apiKey: BREVO_KEYS.api, resources: ['suppressions', 'audiences', 'contacts'] },
    });
    if (res.statusCode !== 201) throw new Error(`POST /provider-imports answered ${res.statusCode}: ${res.body}`);
    const { id } = res.json() as { id: string };
    // Watched from the table, so no request of the script's is counted with the import.
    const ended = async () =>
      (
        await watcher!.query(
          "SELECT 1 FROM provider_imports WHERE id = $1 AND status IN ('completed', 'failed', 'cancelled')",
          [id],
        )
      ).rowCount === 1;
    while (!(await ended())) await new Promise((r) => setTimeout(r, 50));
    const ms = performance.now() - started;
    counting = false;
    const cpu = {
      node: (process.cpuUsage().user + process.cpuUsage().system) / 1e6 - nodeCpuBefore,
      server: (await backendsCpu()) - serverCpuBefore,
    };
    await watcher.end();
    const view = (await app.inject({ method: 'GET', url: `/provider-imports/${id}`, headers })).json() as {
      status: string;
      report: unknown;
      lastError: string | null;
    };
    if (view.status !== 'completed') throw new Error(`the import ended ${view.status}: ${view.lastError}`);
    const rows = CONTACTS + SUPPRESSIONS;
    const total = [...counts.values()].reduce((a, b) => a + b, 0);
    console.log(`report ${JSON.stringify(view.report)}`);
    console.log(
      `${rows} rows (${CONTACTS} contacts, ${SUPPRESSIONS} suppressions) in ${(ms / 1000).toFixed(2)} s: ` +
        `${(total / rows).toFixed(3)} statements a row; es_append ${appendCalls} calls, ` +
        `${(appendedStreams / Math.max(1, appendCalls)).toFixed(1)} appends a call; CPU a row: ` +
        `PostgreSQL ${((cpu.server / rows) * 1e6).toFixed(0)} µs (this database's backends), ` +
        `Node ${((cpu.node / rows) * 1e6).toFixed(0)} µs (this process, the loopback Brevo's serving included)`,
    );
    for (const [text, count] of [...counts].sort((a, b) => b[1] - a[1]))
      console.log(
        `  ${String(count).padStart(7)}  ${(count / rows).toFixed(3).padStart(7)}  ${(inFlight.get(text) ?? 0).toFixed(0).padStart(6)} ms  ${text}`,
      );
  } finally {
    await app.close();
    await system.close();
    for (const fn of teardowns.reverse()) await fn();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

await main();
