import pg from 'pg';
import { Cursors } from '../api/paging.ts';
import { addDomain } from '../commands/domains/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { openDatabase } from '../infra/db.ts';
import { addressesProjector } from '../projections/addresses/projector.ts';
import { listAddresses, type Reach } from '../projections/addresses/queries.ts';
import type { ReadModels } from '../projections/tables.ts';
import { openSystem } from '../system.ts';
import { createKeys, emit, freshDatabase, msSince, note, round, Samples, startServer } from './support.ts';

export const ADDRESSES = 100_000;
const DOMAINS = 10;
/** A fixed vault key: the bench's server process must open the vault the seeding process filled. */
const SECRETS_KEY = Buffer.alloc(32, 3).toString('base64');

/**
 * Read-model rows straight into the addresses table (the spec's limit is 1,000 a workspace, so the
 * commands could never make 100,000; and projecting them would measure the projector, not the
 * reads). Address n: `user<n>@addr-bench-<n % 10>.example.com`, on the ten domains made through
 * the domains slice; one in twenty disabled.
 */
const SEED = `
INSERT INTO addresses (id, workspace_id, address, local_part, domain, domain_id, enabled, username, registered, created_at, updated_at)
SELECT 'addr_' || lpad(to_hex(n), 24, '0'), $1, format('user%s@%s', n, ($2::text[])[n % ${DOMAINS} + 1]), 'user' || n,
       ($2::text[])[n % ${DOMAINS} + 1], ($3::text[])[n % ${DOMAINS} + 1], n % 20 <> 0, NULL, true, now(), now()
FROM generate_series(1, ${ADDRESSES}) AS n`;

interface Page {
  data: { id: string; address: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

/**
 * GET /addresses and GET /domains/{id}/addresses over 100,000 addresses of one workspace: first
 * pages and walks at the page sizes users ask for (25, 50, 100), a page deep in the list from a
 * cursor, credentials narrowed by domain and by address, and single reads. Sequential requests
 * over HTTP to the service in its own process; p50/p99 per kind.
 */
export async function addressesListBench(): Promise<void> {
  const database = await freshDatabase('addr_list');
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  try {
    const system = await openSystem(database.url, { poolSize: 4, secretsKey: SECRETS_KEY, deliver: false });
    const ws = await createWorkspace(system.commands, { name: 'Bench addresses', ownerEmail: 'owner@bench.test' });
    const names = Array.from({ length: DOMAINS }, (_, i) => `addr-bench-${i}.example.com`);
    const domainIds: string[] = [];
    for (const name of names)
      domainIds.push(
        await addDomain(
          system.commands,
          system.domains,
          { workspaceId: ws.workspaceId, kind: 'operator', id: null },
          { domain: name },
          new Date().toISOString(),
        ),
      );
    await system.close();

    note(`addresses-list: seeding ${ADDRESSES} addresses as read-model rows`);
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const started = process.hrtime.bigint();
    const indexNames = [...addressesProjector.indexes!('public').matchAll(/INDEX IF NOT EXISTS (\w+)/g)].map(
      (m) => m[1],
    );
    for (const name of indexNames) await client.query(`DROP INDEX IF EXISTS ${name}`);
    await client.query(SEED, [ws.workspaceId, names, domainIds]);
    await client.query(addressesProjector.indexes!('public'));
    await client.query('VACUUM ANALYZE addresses');
    await emit({ bench: 'addresses-list.seed', rows: ADDRESSES, seconds: round(msSince(started) / 1000, 1) });
    const secret: Buffer = (await client.query(`SELECT value FROM server_secrets WHERE name = 'cursor'`)).rows[0].value;
    const deep = (
      await client.query(
        'SELECT address, id FROM addresses WHERE workspace_id = $1 ORDER BY address, id OFFSET $2 LIMIT 1',
        [ws.workspaceId, Math.floor(ADDRESSES * 0.9)],
      )
    ).rows[0];
    const sampleIds: string[] = (
      await client.query('SELECT id FROM addresses WHERE workspace_id = $1 ORDER BY random() LIMIT 300', [
        ws.workspaceId,
      ])
    ).rows.map((r: { id: string }) => r.id);
    const someAddresses: string[] = (
      await client.query(
        `SELECT address FROM addresses WHERE workspace_id = $1 AND domain = $2 ORDER BY random() LIMIT 50`,
        [ws.workspaceId, names[1]],
      )
    ).rows.map((r: { address: string }) => r.address);
    await client.end();
    const deepCursor = new Cursors(secret).encode('addresses', ws.workspaceId, [deep.address, deep.id]);

    server = await startServer(database.url, 0, { secretsKey: SECRETS_KEY, deliver: false });
    const base = server.baseUrl;
    const post = async (body: object) => {
      const res = await fetch(`${base}/keys`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return ((await res.json()) as { token: string }).token;
    };
    // 600 requests a minute per key: kinds rotate over several keys.
    const readers = [ws.apiKey, ...(await createKeys(base, ws.apiKey, 13, ['domains:read']))];
    const byDomain = [];
    const byAddress = [];
    for (let i = 0; i < 3; i++) byDomain.push(await post({ scopes: ['domains:read'], domainAllowlist: [names[0]] }));
    for (let i = 0; i < 3; i++)
      byAddress.push(await post({ scopes: ['domains:read'], addressAllowlist: someAddresses }));

    let turn = 0;
    const get = async (keys: string[], path: string): Promise<Page> => {
      const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${keys[turn++ % keys.length]}` } });
      const body = (await res.json()) as Page;
      if (res.status !== 200) throw new Error(`GET ${path} answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };
    /** `n` sequential requests of one kind; `path` may follow the previous page's cursor. */
    const measure = async (
      kind: string,
      keys: string[],
      n: number,
      path: (previous: Page | null, i: number) => string,
      extra: Record<string, unknown> = {},
    ) => {
      const samples = new Samples(n);
      let previous: Page | null = null;
      let rows = 0;
      for (let i = 0; i < n; i++) {
        previous = await samples.time(() => get(keys, path(previous, i)));
        rows += previous.data?.length ?? 1;
      }
      const [p50, p99] = samples.percentiles();
      await emit({
        bench: 'addresses-list.get',
        kind,
        ...extra,
        requests: n,
        rowsSeen: rows,
        p50Ms: round(p50!, 2),
        p99Ms: round(p99!, 2),
      });
    };
    const walk =
      (prefix: string, limit: number) =>
      (previous: Page | null): string =>
        `${prefix}?limit=${limit}${previous?.nextCursor ? `&cursor=${encodeURIComponent(previous.nextCursor)}` : ''}`;

    // Warm-up: the server's first requests pay for JIT and the pool's connections.
    await measure('warm-up', readers, 50, () => '/addresses');
    for (const limit of [25, 50, 100]) {
      await measure('first page', readers, 300, () => `/addresses?limit=${limit}`, { limit });
      await measure('walk', readers, 300, walk('/addresses', limit), { limit });
      await measure('deep cursor (90%)', readers, 200, () => `/addresses?limit=${limit}&cursor=${deepCursor}`, {
        limit,
      });
      await measure('one domain (10,000), walk', readers, 200, walk(`/domains/${domainIds[3]}/addresses`, limit), {
        limit,
      });
      await measure('narrowed to a domain, walk', byDomain, 200, walk('/addresses', limit), { limit });
    }
    await measure('narrowed to 50 addresses', byAddress, 200, () => '/addresses?limit=100', { limit: 100 });
    await measure('single read', readers, 300, (_p, i) => `/addresses/${sampleIds[i % sampleIds.length]}`);

    // The query alone, in this process: what the read model costs, apart from HTTP, the credential
    // lookup and the rate-limit count every request also makes (and apart from the server's share
    // of a loaded machine).
    const direct = openDatabase(database.url, 2);
    try {
      const query = async (kind: string, limit: number, reach: Reach | null, after: [string, string] | null) => {
        const samples = new Samples(300);
        for (let i = 0; i < 300; i++)
          await samples.time(() =>
            listAddresses(direct.db.withTables<ReadModels>(), ws.workspaceId, { reach }, limit, after),
          );
        const [p50, p99] = samples.percentiles();
        await emit({
          bench: 'addresses-list.query',
          kind,
          limit,
          requests: 300,
          p50Ms: round(p50!, 2),
          p99Ms: round(p99!, 2),
        });
      };
      for (const limit of [25, 100]) {
        await query('first page', limit, null, null);
        await query('deep cursor (90%)', limit, null, [deep.address, deep.id]);
        await query('narrowed to a domain', limit, { domains: [names[0]!], addresses: [] }, null);
        await query('narrowed to 50 addresses', limit, { domains: [], addresses: someAddresses }, null);
      }
    } finally {
      await direct.close();
    }
  } finally {
    if (server) await server.close();
    await database.drop();
  }
}
