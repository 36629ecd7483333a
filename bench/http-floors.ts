import { existsSync } from 'node:fs';
import autocannon from 'autocannon';
import pg from 'pg';
import {
  besideBench,
  type BenchServer,
  createKeys,
  emit,
  type FreshDatabase,
  freshDatabase,
  note,
  postgresCpuMeter,
  round,
  startServer,
} from './support.ts';

const CONNECTIONS = 64;
/**
 * Seconds a round loads a server (BENCH_SECONDS). A round's first half second is slow on both
 * servers alike (64 fresh connections): over 10 s its requests were up to most of the slowest 1%,
 * so p99 measured the start more than the path. Over 30 s they are a tenth to a third of it.
 */
const DURATION_S = Number(process.env.BENCH_SECONDS ?? 30);
const WARMUP_S = 1;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** BENCH_PATHS=get (or post, or email, or a list of them) measures those paths only. */
const PATHS = (['get', 'post', 'email'] as const).filter((p) =>
  (process.env.BENCH_PATHS ?? 'get,post,email').split(',').includes(p),
);
/** 30 workspaces x 20 keys: at 600 requests a minute per key, 6,000 req/s before any key trips the limit. */
const WORKSPACES = 30;
const KEYS_PER_WORKSPACE = 20;
const ROWS_PER_WORKSPACE = 1000;

type Path = (typeof PATHS)[number];

interface Target {
  name: string;
  server: BenchServer;
  /** Its database's name: PostgreSQL's share is counted over that database's sessions. */
  database: string;
  /** KEYS_PER_WORKSPACE keys of each workspace in turn, the workspaces in the server's order. */
  keys: string[];
}

/** The sending address of the workspace that the key at `index` of Target.keys belongs to. */
const senderOf = (index: number) => `sender@ws${Math.floor(index / KEYS_PER_WORKSPACE)}.bench.test`;

const PATH_NAMES: Record<Path, string> = {
  get: 'GET /suppressions?limit=25',
  post: 'POST /suppressions, a new address each',
  email: 'POST /emails, one recipient, text and html',
};
const TARGETS: Record<Path, string> = {
  get: '>= 0.8 x floor req/s, p99 <= 1.25 x floor',
  post: '>= 1.0 x floor req/s, p99 <= floor',
  email: '>= 1.0 x floor req/s, p99 <= floor',
};

/**
 * The shared request path against its floor, in one run: GET /suppressions?limit=25, POST
 * /suppressions (a new address each) and POST /emails (one recipient; the server then tries to
 * deliver what it accepts, as `npm start` runs it, and with no MX to reach defers each message)
 * with autocannon at 64 connections, round-robin over 600 keys,
 * on the service (its own process) and on bench/floor-server.ts (bare Fastify + pg doing the
 * round trips the path cannot do without), alternating, ROUNDS times (BENCH_ROUNDS, 3 by
 * default) so that the load of the shared machine falls on both alike; BENCH_PATHS=get or post
 * takes one path only. With BENCH_BASELINE set to
 * another checkout of this repository (its node_modules in place), its bench/server.ts runs in the
 * same rotation on a database of its own: a change measured against the build before it.
 */
export async function httpFloorsBench(): Promise<void> {
  const databases = [await freshDatabase('floors')];
  const targets: Target[] = [];
  try {
    const ours = await prepare('ours', databases[0]!);
    targets.push(ours);
    targets.push({
      name: 'floor',
      server: await startServer(databases[0]!.url, 0, {}, besideBench('floor-server')),
      database: databases[0]!.name,
      keys: ours.keys,
    });
    const baseline = process.env.BENCH_BASELINE;
    if (baseline) {
      databases.push(await freshDatabase('floors_base'));
      // Compiled as ours is when its checkout has run `npm run build:bench`, else under tsx.
      const compiled = `${baseline}/.bench-build/bench/server.js`;
      const script = existsSync(compiled) ? compiled : `${baseline}/bench/server.ts`;
      targets.push(await prepare('baseline', databases[1]!, script));
    }

    const figures = new Map<string, { reqPerSec: number; p99Ms: number }[]>();
    // Every round of a path before the next path: the service retries what `POST /emails` could not
    // deliver from a minute on (this bench gives it no MX to reach), and those retries must not fall
    // into the figures of the paths after it, so the email path, last in PATHS, comes last.
    for (const path of PATHS) {
      for (let r = 1; r <= ROUNDS; r++) {
        for (const target of targets) {
          await load(target, path, 16, WARMUP_S);
          const cpuBefore = await target.server.cpuSeconds();
          const postgresCpu = postgresCpuMeter(target.database);
          const result = await load(target, path, CONNECTIONS, DURATION_S);
          const cpu = (await target.server.cpuSeconds()) - cpuBefore;
          const postgresSeconds = postgresCpu();
          const figure = {
            reqPerSec: round(result.requests.total / result.duration),
            p50Ms: result.latency.p50,
            p99Ms: result.latency.p99,
          };
          const key = `${path}:${target.name}`;
          figures.set(key, [...(figures.get(key) ?? []), figure]);
          await emit({
            bench: `http.floors.${path}`,
            server: target.name,
            round: r,
            ...figure,
            non2xx: result.non2xx,
            statusCodes: Object.fromEntries(
              Object.entries(result.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]),
            ),
            errors: result.errors,
            timeouts: result.timeouts,
            serverCpuMsPerRequest: round((cpu * 1000) / result.requests.total, 3),
            postgresCpuMsPerRequest: round((postgresSeconds * 1000) / result.requests.total, 3),
            connections: CONNECTIONS,
            durationSec: result.duration,
          });
        }
      }
    }
    for (const path of PATHS) {
      const floor = figures.get(`${path}:floor`)!;
      for (const name of targets.map((t) => t.name).filter((n) => n !== 'floor')) {
        const runs = figures.get(`${path}:${name}`)!;
        await emit({
          bench: `http.floors.${path}.ratio`,
          server: name,
          reqPerSec: runs.map((f) => f.reqPerSec),
          p99Ms: runs.map((f) => f.p99Ms),
          floorReqPerSec: floor.map((f) => f.reqPerSec),
          floorP99Ms: floor.map((f) => f.p99Ms),
          // Each round's ratio: the two ran back to back, at the same load.
          ratio: runs.map((f, i) => round(f.reqPerSec / floor[i]!.reqPerSec, 2)),
          p99Ratio: runs.map((f, i) => round(f.p99Ms / floor[i]!.p99Ms, 2)),
          path: PATH_NAMES[path],
          target: TARGETS[path],
        });
      }
    }
  } finally {
    for (const t of targets) await t.server.close().catch(() => NaN);
    for (const d of databases) await d.drop();
  }
}

/**
 * A server with its workspaces, 20 keys each, ROWS_PER_WORKSPACE suppressions and one sending
 * address (both put in the read models with SQL: the bench measures requests, not imports or
 * domain verification).
 */
async function prepare(name: string, database: FreshDatabase, script?: string): Promise<Target> {
  const { url } = database;
  const server = await startServer(url, WORKSPACES, {}, script);
  const keys: string[] = [];
  const scopes = ['settings:read', 'settings:write', 'emails:send'];
  for (const ws of server.workspaces)
    keys.push(ws.apiKey, ...(await createKeys(server.baseUrl, ws.apiKey, KEYS_PER_WORKSPACE - 1, scopes)));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO suppressions (workspace_id, id, email, reason, detail, removable, created_at)
       SELECT w, gen_random_uuid(), format('seed%s@example%s.test', n, n % 50), 'manual', null, true,
              timestamptz '2025-01-01' + n * interval '1 second'
       FROM unnest($1::text[]) AS w, generate_series(1, $2::int) AS n`,
      [server.workspaces.map((w) => w.workspaceId), ROWS_PER_WORKSPACE],
    );
    await client.query(
      `INSERT INTO addresses (workspace_id, id, address, local_part, domain, domain_id, enabled, username, registered, created_at, updated_at)
       SELECT w, 'addr_' || lpad(i::text, 24, '0'), 'sender@ws' || (i - 1) || '.bench.test', 'sender',
              'ws' || (i - 1) || '.bench.test', gen_random_uuid()::text, true, NULL, true, now(), now()
       FROM unnest($1::text[]) WITH ORDINALITY AS u(w, i)`,
      [server.workspaces.map((w) => w.workspaceId)],
    );
    await client.query('ANALYZE suppressions');
  } finally {
    await client.end();
  }
  note(`http-floors: ${name} ready, ${keys.length} keys, ${ROWS_PER_WORKSPACE} suppressions per workspace`);
  return { name, server, database: database.name, keys };
}

let sent = 0;

function load(target: Target, path: Path, connections: number, duration: number) {
  const { keys } = target;
  const json = (n: number, body: unknown) => ({
    authorization: `Bearer ${keys[n % keys.length]}`,
    'content-type': 'application/json',
    body: JSON.stringify(body),
  });
  return autocannon({
    url: target.server.baseUrl,
    connections,
    duration,
    requests: [
      path === 'email'
        ? {
            method: 'POST',
            path: '/emails',
            setupRequest: (request) => {
              const n = sent++;
              const { body, ...headers } = json(n, {
                from: senderOf(n % keys.length),
                to: `r${n % 5000}@example.org`,
                subject: `Order ${n} confirmed`,
                text: `Hello,\n\nyour order ${n} is confirmed and will ship soon.\n\nThanks`,
                html: `<p>Hello,</p><p>your order <b>${n}</b> is confirmed and will ship soon.</p><p>Thanks</p>`,
              });
              return { ...request, headers: { ...request.headers, ...headers }, body };
            },
          }
        : path === 'get'
          ? {
              method: 'GET',
              path: '/suppressions?limit=25',
              setupRequest: (request) => ({
                ...request,
                headers: { ...request.headers, authorization: `Bearer ${keys[sent++ % keys.length]}` },
              }),
            }
          : {
              method: 'POST',
              path: '/suppressions',
              setupRequest: (request) => {
                const n = sent++;
                const { body, ...headers } = json(n, { email: `${target.name}-${n}@bench${n % 50}.example.com` });
                return { ...request, headers: { ...request.headers, ...headers }, body };
              },
            },
    ],
  });
}
