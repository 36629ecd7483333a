import pg from 'pg';
import { Cursors } from '../api/paging.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openSystem } from '../system.ts';
import {
  createKeys,
  emit,
  freshDatabase,
  note,
  round,
  Samples,
  seedInChunks,
  startServer,
  waitForCheckpoint,
  type BenchServer,
  type FreshDatabase,
} from './support.ts';

export const ROWS = 1_000_000;
const CHUNK = 100_000;
const DOMAINS = 1000;

export interface Seeded {
  database: FreshDatabase;
  workspaceId: string;
  ownerKey: string;
  /** The service, caught up with the seeded events. */
  server: BenchServer;
}

/**
 * One SuppressionAdded event per address (its own stream, revision 0), written the way es_append
 * writes them: positions from es_position_seq, tx_id the writing transaction's id, one
 * transaction per chunk. Data per the event's zod schema; reasons rotate bounce/complaint/manual;
 * addresses are user<n>@example<n % 1000>.test; createdAt rises 250 ms per address.
 */
const SEED_CHUNK = `
WITH rows AS (
  SELECT n,
         format('user%s@example%s.test', n, n % ${DOMAINS}) AS email,
         (ARRAY['bounce', 'complaint', 'manual'])[n % 3 + 1] AS reason,
         timestamptz '2025-01-01 00:00:00+00' + n * interval '250 milliseconds' AS created_at
  FROM generate_series($1::int, $2::int) AS n
)
INSERT INTO es_events (position, tx_id, stream_id, revision, type, version, data, metadata)
SELECT nextval('es_position_seq'), pg_current_xact_id(), 'ws-' || $3 || '.suppression-' || email, 0, 'SuppressionAdded', 1,
       jsonb_build_object(
         'suppressionId', gen_random_uuid(),
         'email', email,
         'reason', reason,
         'detail', CASE reason WHEN 'bounce' THEN 'smtp; 550 5.1.1 user unknown' WHEN 'complaint' THEN 'feedback loop report' END,
         'removable', reason <> 'bounce',
         'createdAt', to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
       jsonb_build_object('workspaceId', $3::text, 'actor', jsonb_build_object('kind', 'system', 'id', null), 'requestId', null)
FROM rows ORDER BY n`;

/** A fresh database with one workspace and ROWS suppressions in its event store, projected by a running server. */
export async function prepareSeeded(): Promise<Seeded> {
  const database = await freshDatabase('supp_list');
  try {
    // Migrations, projector tables and the workspace with its owner key, through the service itself.
    const system = await openSystem(database.url, { poolSize: 4 });
    const ws = await createWorkspace(system.commands, { name: 'Bench list', ownerEmail: 'owner@bench.test' });
    await system.close();

    note(`suppressions-list: seeding ${ROWS} SuppressionAdded events in chunks of ${CHUNK}`);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const seedSeconds = await seedInChunks(client, SEED_CHUNK, ROWS, CHUNK, [ws.workspaceId]);
    await client.query('ANALYZE es_events');
    const head = Number((await client.query('SELECT max(position) AS p FROM es_events')).rows[0].p);
    await emit({
      bench: 'suppressions-list.seed',
      events: ROWS,
      seconds: round(seedSeconds, 1),
      eventsPerSec: round(ROWS / seedSeconds),
      via: 'SQL generate_series',
    });

    // The projectors catch up from their checkpoints as soon as the server opens the system.
    note('suppressions-list: starting the server; projectors catch up');
    const server = await startServer(database.url);
    await waitForCheckpoint(client, 'suppressions', head, { everyMs: 200, label: 'suppressions-list' });
    const catchUpSeconds = (Date.now() - server.openedAt) / 1000;
    const rows = Number((await client.query('SELECT count(*) AS n FROM suppressions')).rows[0].n);
    await emit({
      bench: 'suppressions-list.catch-up',
      events: ROWS,
      rows,
      seconds: round(catchUpSeconds, 1),
      eventsPerSec: round(ROWS / catchUpSeconds),
      note: 'from the server opening the system to the suppressions checkpoint reaching the head; the other projectors read the same events',
    });
    await client.query('ANALYZE suppressions');
    await client.end();
    return { database, workspaceId: ws.workspaceId, ownerKey: ws.apiKey, server };
  } catch (error) {
    await database.drop();
    throw error;
  }
}

interface Page {
  data: { email: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

export async function suppressionsListBench(options: { keep: boolean }): Promise<Seeded | null> {
  const seeded = await prepareSeeded();
  let kept = false;
  try {
    const { server, workspaceId, database } = seeded;
    // Sequential requests would trip 600/min on one key: 20 keys, round-robin.
    const keys = [seeded.ownerKey, ...(await createKeys(server.baseUrl, seeded.ownerKey, 19, ['settings:read']))];
    let turn = 0;
    const get = async (query: Record<string, string | number>): Promise<Page> => {
      const res = await fetch(
        `${server.baseUrl}/suppressions?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`,
        {
          headers: { authorization: `Bearer ${keys[turn++ % keys.length]}` },
        },
      );
      const body = (await res.json()) as Page;
      if (res.status !== 200) throw new Error(`GET /suppressions answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };

    // Deep cursors, made with the server's own cursor secret for the row at that depth.
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const secret: Buffer = (await client.query(`SELECT value FROM server_secrets WHERE name = 'cursor'`)).rows[0].value;
    const deepRow = (
      await client.query(
        'SELECT created_at, id FROM suppressions WHERE workspace_id = $1 ORDER BY created_at DESC, id DESC OFFSET $2 LIMIT 1',
        [workspaceId, Math.floor(ROWS * 0.9)],
      )
    ).rows[0];
    await client.end();
    const deepCursor = new Cursors(secret).encode('suppressions', workspaceId, [
      deepRow.created_at.toISOString(),
      deepRow.id,
    ]);

    /** Sequential requests for one kind, until `max` requests or `budgetMs` is spent. */
    const measure = async (
      kind: string,
      max: number,
      budgetMs: number,
      next: (previous: Page | null, i: number) => Record<string, string | number> | null,
      extra: Record<string, unknown> = {},
    ) => {
      const samples = new Samples(max);
      const started = Date.now();
      let previous: Page | null = null;
      let rows = 0;
      let error: string | undefined;
      for (let i = 0; i < max && Date.now() - started < budgetMs; i++) {
        const query = next(previous, i);
        if (!query) break;
        try {
          previous = await samples.time(() => get(query));
        } catch (e) {
          error = String(e);
          break;
        }
        rows += previous.data.length;
      }
      const [p50, p99] = samples.percentiles();
      await emit({
        bench: 'suppressions-list.get',
        kind,
        requests: samples.length,
        rowsSeen: rows,
        p50Ms: p50,
        p99Ms: p99,
        ...extra,
        tableRows: ROWS,
        ...(error ? { error } : {}),
        target: 'p99 < 10 ms',
      });
    };
    const walk = (limit: number, cursor: string | null) => (previous: Page | null) =>
      previous === null
        ? { limit, ...(cursor ? { cursor } : {}) }
        : previous.nextCursor
          ? { limit, cursor: previous.nextCursor }
          : null;
    const random = (n: number) => 1 + Math.floor(Math.random() * n);

    note('suppressions-list: page walks and searches over HTTP');
    // Untimed: a few requests so the first kind does not pay for cold connections and JIT.
    for (let i = 0; i < 20; i++) await get({ limit: 25 });
    await measure('walk.first.limit25', 400, 30_000, walk(25, null), { from: 'first page' });
    await measure('walk.first.limit100', 400, 30_000, walk(100, null), { from: 'first page' });
    await measure('walk.deep.limit25', 400, 30_000, walk(25, deepCursor), { from: `row ${Math.floor(ROWS * 0.9)}` });
    await measure('walk.deep.limit100', 400, 30_000, walk(100, deepCursor), { from: `row ${Math.floor(ROWS * 0.9)}` });
    await measure(
      'q.address',
      100,
      20_000,
      () => {
        const n = random(ROWS);
        return { q: `user${n}@example${n % DOMAINS}.test`, limit: 25 };
      },
      { matches: 1 },
    );
    await measure('q.domain', 100, 20_000, () => ({ q: `@example${random(DOMAINS) - 1}.test`, limit: 25 }), {
      matches: ROWS / DOMAINS,
    });
    await measure(
      'q.reason.walk',
      100,
      20_000,
      (previous) => {
        const step = walk(25, null)(previous);
        return step && { ...step, q: 'complaint' };
      },
      { matches: Math.round(ROWS / 3) },
    );
    kept = options.keep;
    return kept ? seeded : null;
  } finally {
    if (!kept) {
      await seeded.server.close().catch(() => {});
      await seeded.database.drop();
    }
  }
}
