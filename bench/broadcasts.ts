/**
 * A broadcast through the whole path: BROADCAST_RECIPIENTS (default 100,000) contacts of one
 * audience (the contacts read model seeded in SQL, as bench/contacts.ts does: creating them
 * through commands would measure contact creation), POST /broadcasts over HTTP, the start's
 * snapshot, every recipient through `sendEmail` (template render with the contact's props,
 * suppressions, quota, compose, blob store, `EmailAccepted`), the delivery process manager (DKIM,
 * direct delivery through the loopback DNS server) to the sink MX of bench/outbound-sink.ts, in its
 * own process. The service runs in this process; meanwhile a client GETs the broadcast over HTTP
 * every 200 ms. Figures: recipients/s from the create to the last 250 (and when the last recipient
 * was accepted, to tell acceptance from delivery), the RSS of this process
 * (sampled every 500 ms; the snapshot is one INSERT … SELECT and pages of 250, so it stays flat),
 * and the GET's p50/p99 during the run.
 */
import { rm } from 'node:fs/promises';
import pg from 'pg';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem, serve } from '../system.ts';
import { TEST_SECRETS_KEY } from '../test/support/secrets.ts';
import { DOMAIN, startSink } from './outbound.ts';
import { emit, freshDatabase, note, round, Samples } from './support.ts';

const RECIPIENTS = Number(process.env.BROADCAST_RECIPIENTS ?? 100_000);
const mb = (bytes: number) => round(bytes / 1024 / 1024);

export async function broadcastsBench(): Promise<void> {
  const database = await freshDatabase('broadcasts');
  const sink = await startSink();
  const system = await openSystem(database.url, {
    secretsKey: TEST_SECRETS_KEY,
    dataDir: `/tmp/${database.name}`,
    dns: { servers: [sink.dnsAddress] },
    domainChecks: { pollMs: 3_600_000 },
    outbound: { mxPort: sink.smtpPort, mxAllowPrivate: true, heloName: 'bench.sender.test' },
    emailDelivery: { pollMs: 20 },
    broadcasts: { pollMs: 20 },
  });
  const app = await serve(system);
  const base = await app.listen({ port: 0, host: '127.0.0.1' });
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const ws = await createWorkspace(system.commands, { name: 'Bench', ownerEmail: 'owner@bench.test' });
    const call = async (method: string, url: string, body?: object) => {
      const res = await fetch(`${base}${url}`, {
        method,
        headers: { authorization: `Bearer ${ws.apiKey}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json = await res.json();
      if (res.status >= 300) throw new Error(`${method} ${url} answered ${res.status}: ${JSON.stringify(json)}`);
      return json;
    };
    await call('POST', '/domains', { domain: DOMAIN });
    await call('POST', '/addresses', { address: `news@${DOMAIN}` });
    const tpl = await call('POST', '/templates', {
      name: 'Bench Letter',
      publish: true,
      subject: 'News for {{name}}',
      document: { body: [{ kind: 'Text', text: 'Hi {{name}}, you are on {{plan}}.' }] },
      props: [
        { name: 'name', type: 'string', default: 'there' },
        { name: 'plan', type: 'string', default: 'free' },
      ],
    });
    const audience = await call('POST', '/audiences', { name: 'Everyone' });
    note(`broadcasts: seeding ${RECIPIENTS} contacts`);
    await client.query(
      `INSERT INTO contacts (workspace_id, id, email, name, notes, attributes, source, last_seen_at, created_at, updated_at)
       SELECT $1, 'con_' || lpad(to_hex(n), 24, '0'), format('user%s@example.org', n), 'User ' || n, NULL,
              '{"plan":"pro"}'::jsonb, 'manual', NULL, now(), now()
       FROM generate_series(1, $2::int) AS n`,
      [ws.workspaceId, RECIPIENTS],
    );
    await client.query(
      `INSERT INTO audience_members (workspace_id, audience_id, contact_id, joined_at)
       SELECT workspace_id, $2, id, now() FROM contacts WHERE workspace_id = $1`,
      [ws.workspaceId, audience.id],
    );
    await client.query('ANALYZE contacts; ANALYZE audience_members');

    note('broadcasts: sending');
    const before = (await sink.count()).messages;
    const rss: number[] = [process.memoryUsage.rss()];
    const sampler = setInterval(() => rss.push(process.memoryUsage.rss()), 500);
    const gets = new Samples();
    const created = await call('POST', '/broadcasts', {
      from: `News <news@${DOMAIN}>`,
      templateId: tpl.id,
      audienceIds: [audience.id],
    });
    let done = false;
    let last = -1;
    let lastChange = Date.now();
    while (!done) {
      await new Promise((r) => setTimeout(r, 200));
      const b = await gets.time(() => call('GET', `/broadcasts/${created.id}`));
      const arrived = (await sink.count()).messages - before;
      done = arrived >= RECIPIENTS && b.progress.delivered >= RECIPIENTS;
      if (arrived !== last) {
        if (Math.floor(arrived / 10_000) !== Math.floor(last / 10_000)) note(`broadcasts: ${arrived} at the sink`);
        last = arrived;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > 60_000) throw new Error(`stuck at ${arrived} of ${RECIPIENTS}`);
    }
    clearInterval(sampler);
    rss.push(process.memoryUsage.rss());
    const { rows } = await client.query<{ seconds: number; snapshot: number; accepted: number }>(
      `SELECT extract(epoch FROM max((d.data->>'at')::timestamptz) - $2::timestamptz) AS seconds,
              (SELECT extract(epoch FROM (data->>'startedAt')::timestamptz - $2::timestamptz) FROM es_events
               WHERE type = 'BroadcastStarted' AND data->>'broadcastId' = $1) AS snapshot,
              (SELECT extract(epoch FROM max((data->>'acceptedAt')::timestamptz) - $2::timestamptz) FROM es_events
               WHERE type = 'EmailAccepted' AND data->>'broadcastId' = $1) AS accepted
       FROM es_events d WHERE d.type = 'EmailRecipientDelivered'`,
      [created.id, created.createdAt],
    );
    const seconds = Number(rows[0]!.seconds);
    const [p50, p99] = gets.percentiles([50, 99]);
    const at = (q: number) => mb(rss[Math.min(rss.length - 1, Math.floor(q * (rss.length - 1)))]!);
    await emit({
      bench: 'broadcasts',
      recipients: RECIPIENTS,
      seconds: round(seconds, 1),
      recipientsPerSec: round(RECIPIENTS / seconds),
      snapshotSeconds: round(Number(rows[0]!.snapshot), 2),
      acceptedSeconds: round(Number(rows[0]!.accepted), 1),
      rssStartMb: at(0),
      rssQuarterMb: at(0.25),
      rssHalfMb: at(0.5),
      rssThreeQuartersMb: at(0.75),
      rssEndMb: at(1),
      rssPeakMb: mb(Math.max(...rss)),
      getRequests: gets.length,
      getP50Ms: round(p50!, 2),
      getP99Ms: round(p99!, 2),
    });
  } finally {
    await client.end();
    await app.close();
    await system.close();
    await sink.close();
    await database.drop();
    await rm(`/tmp/${database.name}`, { recursive: true, force: true });
  }
}
