import autocannon from 'autocannon';
import pg from 'pg';
import { RATE_LIMIT } from '../api/plugins/rate-limit.ts';
import { createKeys, emit, freshDatabase, note, round, startServer } from './support.ts';

const CONNECTIONS = 64;
const DURATION_S = 20;
const WARMUP_S = 3;
const WORKSPACES = 10;
/** The owner key plus 19 made through POST /keys: the 20 active keys a workspace may hold. */
const KEYS_PER_WORKSPACE = 20;

/**
 * Authenticated POST /suppressions, a new address per request, against the real server (its own
 * process) with autocannon. The rate limit is 600 requests a minute per key, so the load goes
 * round-robin over 10 workspaces x 20 keys: every request passes through the limiter, none may trip it.
 */
export async function httpSuppressionsBench(): Promise<void> {
  const database = await freshDatabase('http_supp');
  const server = await startServer(database.url, WORKSPACES);
  try {
    const keys: string[] = [];
    for (const ws of server.workspaces) {
      keys.push(
        ws.apiKey,
        ...(await createKeys(server.baseUrl, ws.apiKey, KEYS_PER_WORKSPACE - 1, ['settings:read', 'settings:write'])),
      );
    }
    note(
      `http-suppressions: ${keys.length} keys over ${WORKSPACES} workspaces; warm-up ${WARMUP_S} s, then ${CONNECTIONS} connections for ${DURATION_S} s`,
    );

    // Counted per key and clock minute, as the limiter counts (fixed windows on the minute).
    const perKeyWindow = new Map<string, number>();
    let sent = 0;
    const run = (label: string, connections: number, duration: number) =>
      autocannon({
        url: server.baseUrl,
        connections,
        duration,
        requests: [
          {
            method: 'POST',
            path: '/suppressions',
            setupRequest: (request) => {
              const n = sent++;
              const key = n % keys.length;
              const slot = `${key}:${Math.floor(Date.now() / 60_000)}`;
              perKeyWindow.set(slot, (perKeyWindow.get(slot) ?? 0) + 1);
              return {
                ...request,
                headers: {
                  ...request.headers,
                  authorization: `Bearer ${keys[key]}`,
                  'content-type': 'application/json',
                },
                body: JSON.stringify({ email: `${label}-${n}@bench${n % 50}.example.com` }),
              };
            },
          },
        ],
      });

    await run('warmup', 16, WARMUP_S);
    const cpuBefore = await server.cpuSeconds();
    const r = await run('load', CONNECTIONS, DURATION_S);
    const serverCpu = (await server.cpuSeconds()) - cpuBefore;
    const statuses = Object.fromEntries(
      Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]),
    );

    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const rows = Number((await client.query('SELECT count(*) AS n FROM suppressions')).rows[0].n);
    await client.end();

    await emit({
      bench: 'http.suppressions.post',
      connections: CONNECTIONS,
      durationSec: r.duration,
      requests: r.requests.total,
      reqPerSec: round(r.requests.total / r.duration),
      p50Ms: r.latency.p50,
      p99Ms: r.latency.p99,
      maxMs: r.latency.max,
      non2xx: r.non2xx,
      statusCodes: statuses,
      errors: r.errors,
      timeouts: r.timeouts,
      rowsAfter: rows,
      serverCpuSeconds: round(serverCpu, 1),
      serverCpuMsPerRequest: round((serverCpu * 1000) / r.requests.total, 2),
      keys: keys.length,
      workspaces: WORKSPACES,
      rateLimit: `${RATE_LIMIT}/min per key; round-robin over ${keys.length} keys, at most ${Math.max(...perKeyWindow.values())} requests per key in one minute window (warm-up included)`,
      client: 'autocannon in the bench process, server in a child process, same 2 cores as PostgreSQL',
      target: '>= 2000 req/s, p99 < 50 ms',
    });
  } finally {
    await server.close().catch(() => NaN);
    await database.drop();
  }
}
