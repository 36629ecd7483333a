import os from 'node:os';
import path from 'node:path';
import { rm } from 'node:fs/promises';
import autocannon from 'autocannon';
import pg from 'pg';
import { createKeys, emit, freshDatabase, note, round, startServer } from './support.ts';

const WORKSPACES = 10;
/** The owner key plus 19 more per workspace: 200 keys x 600 requests a minute stay clear of the rate limit. */
const KEYS_PER_WORKSPACE = 20;
const BATCH = 100;
const BATCH_CONNECTIONS = Number(process.env.EA_BATCH_CONNECTIONS ?? 8);
const SINGLE_CONNECTIONS = 32;
const DURATION_S = Number(process.env.EA_DURATION_S ?? 10);
const WARMUP_S = 2;

/**
 * Acceptance of sends over HTTP, the server in its own process: `POST /emails/batch` of 100
 * messages (messages accepted per second: each answered only once its `EmailAccepted` is in the
 * read model) and single `POST /emails` at 32 connections (latency p50/p99). Every message is
 * checked, composed with nodemailer's composer, stored in the file blob store and counted
 * against the monthly allowance; delivery is not part of it. Each workspace has one sending
 * address, seeded into the addresses read model in SQL (the bench measures sends, not domain
 * verification); keys go round-robin over 10 workspaces x 20 keys. `EA_DELIVER=0`: the server runs
 * without its workers (delivery elsewhere, as NATS allows), to see what acceptance alone costs.
 */
export async function emailsAcceptBench(): Promise<void> {
  const database = await freshDatabase('emails_accept');
  const dataDir = path.join(os.tmpdir(), `bench-emails-accept-${process.pid}`);
  const deliver = process.env.EA_DELIVER !== '0';
  const server = await startServer(database.url, WORKSPACES, { dataDir, deliver });
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const keys: { key: string; from: string }[] = [];
    for (const [i, ws] of server.workspaces.entries()) {
      const from = `sender@ws${i}.bench.test`;
      await client.query(
        `INSERT INTO addresses (workspace_id, id, address, local_part, domain, domain_id, enabled, username, registered, created_at, updated_at)
         VALUES ($1, $2, $3, 'sender', $4, $5, true, NULL, true, now(), now())`,
        [ws.workspaceId, `addr_${String(i).padStart(24, '0')}`, from, `ws${i}.bench.test`, crypto.randomUUID()],
      );
      for (const key of [
        ws.apiKey,
        ...(await createKeys(server.baseUrl, ws.apiKey, KEYS_PER_WORKSPACE - 1, ['emails:send'])),
      ])
        keys.push({ key, from });
    }
    let sent = 0;
    const message = (from: string, k: number) => ({
      from,
      to: `r${k % 5000}@example.org`,
      subject: `Order ${k} confirmed`,
      text: `Hello,\n\nyour order ${k} is confirmed and will ship soon.\n\nThanks`,
      html: `<p>Hello,</p><p>your order <b>${k}</b> is confirmed and will ship soon.</p><p>Thanks</p>`,
      tags: [{ name: 'kind', value: 'receipt' }],
    });
    const load = (url: string, connections: number, duration: number, body: (from: string, n: number) => unknown) =>
      autocannon({
        url: server.baseUrl,
        connections,
        duration,
        requests: [
          {
            method: 'POST',
            path: url,
            setupRequest: (request) => {
              const n = sent++;
              const { key, from } = keys[n % keys.length]!;
              return {
                ...request,
                headers: { ...request.headers, authorization: `Bearer ${key}`, 'content-type': 'application/json' },
                body: JSON.stringify(body(from, n)),
              };
            },
          },
        ],
      });
    const count = async () => Number((await client.query('SELECT count(*) AS n FROM emails')).rows[0].n);
    const statuses = (r: autocannon.Result) =>
      Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count ?? 0]));
    const batchBody = (from: string, n: number) => ({
      emails: Array.from({ length: BATCH }, (_, i) => message(from, n * BATCH + i)),
    });

    note(
      `emails-accept: ${keys.length} keys over ${WORKSPACES} workspaces; batch ${BATCH_CONNECTIONS} connections, single ${SINGLE_CONNECTIONS}, ${DURATION_S} s each`,
    );
    await load('/emails/batch', 4, WARMUP_S, batchBody);
    let before = await count();
    let cpuBefore = await server.cpuSeconds();
    const batch = await load('/emails/batch', BATCH_CONNECTIONS, DURATION_S, batchBody);
    let cpu = (await server.cpuSeconds()) - cpuBefore;
    let accepted = (await count()) - before;
    await emit({
      bench: 'http.emails.batch',
      serverDelivers: deliver,
      batchSize: BATCH,
      connections: BATCH_CONNECTIONS,
      durationSec: batch.duration,
      requests: batch.requests.total,
      messagesAccepted: accepted,
      messagesPerSec: round(accepted / batch.duration),
      p50Ms: batch.latency.p50,
      p99Ms: batch.latency.p99,
      non2xx: batch.non2xx,
      statusCodes: statuses(batch),
      errors: batch.errors,
      timeouts: batch.timeouts,
      serverCpuMsPerMessage: round((cpu * 1000) / Math.max(1, accepted), 3),
      target: '>= 1,000 messages/s',
    });

    await load('/emails', 8, WARMUP_S, message);
    before = await count();
    cpuBefore = await server.cpuSeconds();
    const single = await load('/emails', SINGLE_CONNECTIONS, DURATION_S, message);
    cpu = (await server.cpuSeconds()) - cpuBefore;
    accepted = (await count()) - before;
    await emit({
      bench: 'http.emails.single',
      serverDelivers: deliver,
      connections: SINGLE_CONNECTIONS,
      durationSec: single.duration,
      requests: single.requests.total,
      reqPerSec: round(single.requests.total / single.duration),
      messagesAccepted: accepted,
      p50Ms: single.latency.p50,
      p99Ms: single.latency.p99,
      maxMs: single.latency.max,
      non2xx: single.non2xx,
      statusCodes: statuses(single),
      errors: single.errors,
      timeouts: single.timeouts,
      serverCpuMsPerMessage: round((cpu * 1000) / Math.max(1, accepted), 3),
      client: 'autocannon in the bench process, server in a child process, same 2 cores as PostgreSQL',
      target: 'p99 < 50 ms',
    });
  } finally {
    await client.end();
    await server.close().catch(() => NaN);
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}
