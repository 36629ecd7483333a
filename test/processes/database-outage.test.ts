import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import t from 'tap';
import { startEmbeddedPostgres } from '../../infra/embedded-postgres.ts';
import { eventually, startReceiver } from '../support/receiver.ts';
import { runnable } from '../support/paths.ts';

/**
 * Restarting PostgreSQL is not allowed on the shared server: this test runs a private one
 * (embedded, in a temp folder), restarts it and terminates its backends under load, with the
 * service in a process of its own that must stay up through it all.
 */

interface Ready {
  url: string;
  keys: string[];
}

function startService(
  databaseUrl: string,
  workspaces: number,
  options: object,
): { child: ChildProcess; ready: Promise<Ready>; stderr: () => string } {
  const child = fork(
    runnable('test/support/service-process'),
    [databaseUrl, String(workspaces), JSON.stringify(options)],
    {
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
    },
  );
  let err = '';
  child.stderr!.on('data', (chunk) => (err += chunk));
  const ready = new Promise<Ready>((resolve, reject) => {
    child.on('message', (m: { type: string } & Ready) => m.type === 'ready' && resolve(m));
    child.on('exit', (code) => reject(new Error(`service exited with ${code} before it was ready: ${err}`)));
  });
  return { child, ready, stderr: () => err };
}

interface Answered {
  at: number;
  kind: 'suppression' | 'contact';
  email: string;
  status: number;
  body: any;
  retryAfter: string | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

t.test(
  'terminated backends and a restart of PostgreSQL under load: nothing acknowledged is lost, the process stays up and serves again',
  async (t) => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wms-outage-'));
    // As root, PostgreSQL runs as a `postgres` user, which must reach the folder.
    fs.chmodSync(dataDir, 0o755);
    let database = await startEmbeddedPostgres(dataDir);
    t.teardown(async () => {
      await database.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    });
    const receiver = await startReceiver(t);
    // Short pauses before a lost delivery job is claimed again, so the test need not wait a minute.
    const service = startService(database.url, 4, { webhooks: { allowPrivate: true, staleAfterMs: 2000 } });
    t.teardown(() => {
      service.child.kill('SIGKILL');
    });
    const { url, keys } = await service.ready;

    const call = async (key: string, method: string, route: string, body?: object) => {
      const response = await fetch(`${url}${route}`, {
        method,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
        signal: AbortSignal.timeout(60_000),
      });
      return {
        status: response.status,
        body: await response.json().catch(() => null),
        retryAfter: response.headers.get('retry-after'),
      };
    };
    for (const key of keys) {
      t.equal((await call(key, 'POST', '/webhooks', { url: receiver.url, eventTypes: ['suppression.*'] })).status, 201);
    }

    // Every key writes, one request after another, a suppression and a contact in turn; a pause
    // between requests keeps each key under its 600 requests a minute.
    const answered: Answered[] = [];
    let loading = true;
    const load = keys.map(async (key, k) => {
      for (let i = 0; loading; i++) {
        const kind = i % 2 === 0 ? 'suppression' : 'contact';
        const email = `${kind}-${k}-${i}@example.com`;
        const r = await call(key, 'POST', kind === 'suppression' ? '/suppressions' : '/contacts', { email });
        answered.push({ at: Date.now(), kind, email, ...r });
        await sleep(40);
      }
    });

    const admin = async <T>(sql: string): Promise<T[]> => {
      const client = new pg.Client({ connectionString: database.url });
      await client.connect();
      try {
        return (await client.query(sql)).rows;
      } finally {
        await client.end();
      }
    };
    // Every session of the service, the projection leader's included.
    const terminate = () =>
      admin<{ pid: number }>(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
      );

    // Load counted, not timed: a busy machine serves fewer requests a second.
    const answeredSince = (at: number, status?: number) =>
      answered.filter((a) => a.at > at && (status === undefined || a.status === status)).length;
    await eventually(async () => answeredSince(0, 201) >= 10, 30_000);
    t.pass('load served before the first blow');
    // Each blow lasts until the load has met it, not a fixed time: answers after the terminated
    // backends, a refusal while the server is down, a write served by the restarted server.
    const firstBlow = Date.now();
    t.ok((await terminate()).length > 0, 'backends terminated');
    await eventually(async () => answeredSince(firstBlow) >= keys.length, 30_000);
    await database.stop();
    const stopped = Date.now();
    await eventually(async () => answeredSince(stopped, 503) >= 1, 30_000);
    database = await startEmbeddedPostgres(dataDir);
    const restarted = Date.now();
    await eventually(async () => answeredSince(restarted, 201) >= 1, 30_000);
    t.ok((await terminate()).length > 0, 'backends terminated again');
    const lastBlow = Date.now();
    await eventually(async () => answeredSince(lastBlow, 201) >= 20, 30_000);
    t.pass('load served after the last blow');
    loading = false;
    await Promise.all(load);

    t.equal(service.child.exitCode, null, 'the service process is still running', {
      stderr: service.stderr().slice(-3000),
    });
    const refused = answered.filter((a) => a.status >= 300);
    t.same(
      refused.filter((a) => a.status !== 503 || a.body?.error?.code !== 'unreachable' || a.retryAfter === null),
      [],
      'every request not served answered 503 unreachable with Retry-After',
    );
    const served = answered.filter((a) => a.status === 201);
    t.equal(served.length + refused.length, answered.length, 'every write either stored (201) or refused');
    t.ok(Math.min(...served.filter((a) => a.at > lastBlow).map((a) => a.at)) - lastBlow < 15_000, 'within seconds');
    t.ok(refused.length > 0, 'the outage was felt');

    // Nothing acknowledged is lost: every 201 is in the event store and in the read models.
    const suppressions = served.filter((a) => a.kind === 'suppression');
    const contacts = served.filter((a) => a.kind === 'contact');
    const stored = new Set(
      (
        await admin<{ email: string }>(
          `SELECT data->>'email' AS email FROM es_events WHERE type IN ('SuppressionAdded', 'ContactCreated')`,
        )
      ).map((r) => r.email),
    );
    t.same(
      served.filter((a) => !stored.has(a.email)).map((a) => a.email),
      [],
      'every acknowledged write is in the event store',
    );
    const key = (a: Answered) => keys[Number(a.email.split('-')[1])]!;
    const unread: string[] = [];
    for (const a of suppressions)
      if ((await call(key(a), 'GET', `/suppressions/${a.body.id}`)).status !== 200) unread.push(a.email);
    for (const a of contacts)
      if ((await call(key(a), 'GET', `/contacts/${a.email}`)).status !== 200) unread.push(a.email);
    t.same(unread, [], 'every acknowledged write is in the read models');

    // The process managers went on from their checkpoints: every stored suppression reaches the endpoint.
    const delivered = await eventually(async () => {
      const seen = new Set(receiver.received.map((r) => JSON.parse(r.body).data?.email));
      return suppressions.every((a) => seen.has(a.email)) && seen;
    }, 60_000).catch(() => new Set(receiver.received.map((r) => JSON.parse(r.body).data?.email)));
    t.same(
      suppressions.filter((a) => !delivered.has(a.email)).map((a) => a.email),
      [],
      'every acknowledged suppression delivered to its webhook',
    );
  },
);
