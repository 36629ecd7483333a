import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import {
  appendUnderPositionLock,
  emit,
  freshDatabase,
  note,
  percentiles,
  round,
  seedInChunks,
  startServer,
} from './support.ts';

const ENDPOINTS = 5;
const BURST_EVENTS = 10_000;
const PACED_EVENTS = 4_000;
const PACED_PER_SECOND = 200;

/** SuppressionAdded events as es_append writes them: positions from the sequence, tx_id of the writing transaction. */
const APPEND = `
WITH rows AS (SELECT n, format('%s-%s@bench%s.test', $3::text, n, n % 100) AS email FROM generate_series($1::int, $2::int) AS n)
INSERT INTO es_events (position, tx_id, stream_id, revision, type, version, data, metadata)
SELECT nextval('es_position_seq'), pg_current_xact_id(), 'ws-' || $4 || '.suppression-' || email, 0, 'SuppressionAdded', 1,
       jsonb_build_object('suppressionId', gen_random_uuid(), 'email', email, 'reason', 'manual', 'detail', null, 'removable', true,
                          'createdAt', to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
       jsonb_build_object('workspaceId', $4::text, 'actor', jsonb_build_object('kind', 'system', 'id', null), 'requestId', null)
FROM rows ORDER BY n`;

/**
 * Webhook delivery at 10,000 events fanned out to 5 endpoints of one workspace, all on a receiver
 * in this process (the service runs in its own). Two phases: a burst (events written 1,000 per
 * transaction as fast as PostgreSQL takes them: deliveries/s) and a paced run (200 events/s, 1,000 deliveries/s:
 * event-to-delivery latency when the service keeps up). Latency runs from the event's commit
 * time (the payload's `timestamp`) to the receiver reading the request.
 */
export async function webhooksBench(): Promise<void> {
  const database = await freshDatabase('webhooks');
  const arrivals: { at: number; sent: number }[] = [];
  let expected = 0;
  let done: () => void = () => {};
  const receiver = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const at = Date.now();
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { timestamp: string };
      arrivals.push({ at, sent: Date.parse(body.timestamp) });
      res.writeHead(204).end();
      if (arrivals.length === expected) done();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  const server = await startServer(database.url, 1, { webhooks: { allowPrivate: true } });
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const ws = server.workspaces[0]!;
    for (let i = 0; i < ENDPOINTS; i++) {
      const res = await fetch(`${server.baseUrl}/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: `${receiverUrl}/hook${i}`, eventTypes: ['suppression.*'] }),
      });
      if (res.status !== 201) throw new Error(`POST /webhooks answered ${res.status}: ${await res.text()}`);
    }
    const phase = async (label: string, events: number, write: () => Promise<void>) => {
      arrivals.length = 0;
      expected = events * ENDPOINTS;
      const all = new Promise<void>((resolve) => (done = resolve));
      const started = Date.now();
      const cpuBefore = await server.cpuSeconds();
      await write();
      const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 300_000));
      const outcome = await Promise.race([all.then(() => 'ok' as const), timeout]);
      const seconds = (Math.max(...arrivals.map((a) => a.at)) - started) / 1000;
      const serverCpuMsPerDelivery = round(
        (((await server.cpuSeconds()) - cpuBefore) * 1000) / Math.max(1, arrivals.length),
        2,
      );
      const [p50, p99] = percentiles(arrivals.map((a) => a.at - a.sent));
      await emit({
        bench: `webhooks.${label}`,
        events,
        endpoints: ENDPOINTS,
        deliveries: arrivals.length,
        ...(outcome === 'timeout' ? { error: `only ${arrivals.length} of ${expected} deliveries within 300 s` } : {}),
        seconds: round(seconds, 1),
        deliveriesPerSec: round(arrivals.length / seconds),
        latencyP50Ms: p50,
        latencyP99Ms: p99,
        serverCpuMsPerDelivery,
        target: '1,000 deliveries/s, p99 < 500 ms',
      });
    };
    note(`webhooks: burst of ${BURST_EVENTS} events to ${ENDPOINTS} endpoints`);
    await phase('burst', BURST_EVENTS, async () => {
      await seedInChunks(client, APPEND, BURST_EVENTS, 1000, ['burst', ws.workspaceId]);
    });
    note(`webhooks: ${PACED_EVENTS} events at ${PACED_PER_SECOND}/s`);
    await phase('paced', PACED_EVENTS, async () => {
      const batch = PACED_PER_SECOND / 10;
      const t0 = Date.now();
      for (let i = 0; i < PACED_EVENTS / batch; i++) {
        await appendUnderPositionLock(client, APPEND, [i * batch + 1, (i + 1) * batch, 'paced', ws.workspaceId]);
        const wait = t0 + (i + 1) * 100 - Date.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      }
    });
  } finally {
    await client.end();
    await server.close().catch(() => {});
    receiver.closeAllConnections();
    receiver.close();
    await database.drop();
  }
}
