import autocannon from 'autocannon';
import pg from 'pg';
import { EVENT_RATE_LIMIT } from '../commands/contact-events/record.ts';
import { createKeys, emit, freshDatabase, note, round, startServer } from './support.ts';

/** `CE_CONNECTIONS=16 npm run bench -- contact-events` tries another concurrency. */
const CONNECTIONS = Number(process.env.CE_CONNECTIONS ?? 32);
const DURATION_S = 15;
const WARMUP_S = 2;
const WORKSPACES = 25;
/** The owner key plus 19 more: 500 keys x 600 events a minute leaves room above the target. */
const KEYS_PER_WORKSPACE = 20;
const CONTACTS_PER_WORKSPACE = 2_000;
const BATCH = 100;
const NAMES = [
  'page_viewed',
  'clicked',
  'opened',
  'signed_up',
  'added_to_cart',
  'paid',
  'logged_in',
  'searched',
  'shared',
  'invited',
];

/**
 * POST /events/batch of 100 events over HTTP, the server in its own process: events stored per
 * second (a 2xx batch answers only once its events are in the read models and enrolment has seen
 * them) and request latency. Each workspace has 2,000 contacts (seeded into the contacts read model
 * in SQL: the bench measures events, not contact creation) and one live automation on `signed_up`
 * with a property filter, so a tenth of the events goes through enrolment too. Keys go round-robin
 * over 25 workspaces x 20 keys, so no key passes 600 events a minute.
 */
export async function contactEventsBench(): Promise<void> {
  const database = await freshDatabase('contact_events');
  const server = await startServer(database.url, WORKSPACES);
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const keys: string[] = [];
    for (const ws of server.workspaces) {
      keys.push(
        ws.apiKey,
        ...(await createKeys(server.baseUrl, ws.apiKey, KEYS_PER_WORKSPACE - 1, ['contacts:write', 'contacts:read'])),
      );
      const res = await fetch(`${server.baseUrl}/automations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          name: 'Onboarding',
          trigger: { event: 'signed_up', filters: [{ property: 'plan', op: 'equals', value: 'pro' }] },
          steps: [
            { type: 'wait', minutes: 60 },
            { type: 'send', template: 'welcome' },
          ],
        }),
      });
      if (res.status !== 201) throw new Error(`POST /automations answered ${res.status}`);
    }
    const workspaceOfKey = keys.map((_, i) => Math.floor(i / KEYS_PER_WORKSPACE));
    await client.query(
      `INSERT INTO contacts (workspace_id, id, email, name, notes, attributes, source, last_seen_at, created_at, updated_at)
       SELECT w.id, 'con_' || substr(md5(w.id || n), 1, 24), 'c' || n || '@bench.example.com', NULL, NULL, '{}', 'manual', NULL, now(), now()
       FROM unnest($1::text[]) AS w(id), generate_series(0, $2 - 1) AS n`,
      [server.workspaces.map((w) => w.workspaceId), CONTACTS_PER_WORKSPACE],
    );
    note(
      `contact-events: ${keys.length} keys over ${WORKSPACES} workspaces, ${CONTACTS_PER_WORKSPACE} contacts each; warm-up ${WARMUP_S} s, then ${CONNECTIONS} connections for ${DURATION_S} s`,
    );

    const perKeyWindow = new Map<string, number>();
    let sent = 0;
    const body = (n: number) =>
      JSON.stringify({
        events: Array.from({ length: BATCH }, (_, i) => {
          const k = n * BATCH + i;
          const name = NAMES[k % NAMES.length]!;
          return {
            name,
            email: `c${(k * 7919) % CONTACTS_PER_WORKSPACE}@bench.example.com`,
            properties: { plan: k % 3 === 0 ? 'pro' : 'free', n: k, path: `/p/${k % 97}` },
          };
        }),
      });
    const run = (connections: number, duration: number) =>
      autocannon({
        url: server.baseUrl,
        connections,
        duration,
        requests: [
          {
            method: 'POST',
            path: '/events/batch',
            setupRequest: (request) => {
              const n = sent++;
              const key = n % keys.length;
              const slot = `${key}:${Math.floor(Date.now() / 60_000)}`;
              perKeyWindow.set(slot, (perKeyWindow.get(slot) ?? 0) + BATCH);
              return {
                ...request,
                headers: {
                  ...request.headers,
                  authorization: `Bearer ${keys[key]}`,
                  'content-type': 'application/json',
                },
                body: body(n),
              };
            },
          },
        ],
      });

    await run(8, WARMUP_S);
    const before = Number((await client.query('SELECT count(*) AS n FROM contact_events')).rows[0].n);
    const cpuBefore = await server.cpuSeconds();
    const r = await run(CONNECTIONS, DURATION_S);
    const serverCpu = (await server.cpuSeconds()) - cpuBefore;
    const after = Number((await client.query('SELECT count(*) AS n FROM contact_events')).rows[0].n);
    const runs = Number((await client.query('SELECT count(*) AS n FROM automation_runs')).rows[0].n);
    const statuses = Object.fromEntries(
      Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]),
    );
    const stored = after - before;
    await emit({
      bench: 'http.events.batch',
      batchSize: BATCH,
      connections: CONNECTIONS,
      durationSec: r.duration,
      requests: r.requests.total,
      reqPerSec: round(r.requests.total / r.duration),
      eventsStored: stored,
      eventsPerSec: round(stored / r.duration),
      p50Ms: r.latency.p50,
      p99Ms: r.latency.p99,
      maxMs: r.latency.max,
      non2xx: r.non2xx,
      statusCodes: statuses,
      errors: r.errors,
      timeouts: r.timeouts,
      automationRuns: runs,
      serverCpuSeconds: round(serverCpu, 1),
      serverCpuMsPerEvent: round((serverCpu * 1000) / Math.max(1, stored), 3),
      keys: keys.length,
      workspaces: new Set(workspaceOfKey).size,
      rateLimit: `${EVENT_RATE_LIMIT} events/min per key; round-robin over ${keys.length} keys, at most ${Math.max(...perKeyWindow.values())} events per key in one minute window (warm-up included)`,
      client: 'autocannon in the bench process, server in a child process, same 2 cores as PostgreSQL',
      target: '>= 10,000 events/s',
    });
  } finally {
    await client.end();
    await server.close().catch(() => NaN);
    await database.drop();
  }
}
