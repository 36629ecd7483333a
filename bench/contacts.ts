import pg from 'pg';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import { contactsProjector } from '../projections/contacts/projector.ts';
import { openSystem } from '../system.ts';
import { createKeys, emit, freshDatabase, msSince, note, round, Samples, startServer } from './support.ts';

export const CONTACTS = 1_000_000;
const CUSTOM_AUDIENCES = 9;
const DOMAINS = 1000;
const FIRST = [
  'Ada',
  'Grace',
  'Alan',
  'Edsger',
  'Barbara',
  'Donald',
  'Frances',
  'Ken',
  'Margaret',
  'Dennis',
  'Radia',
  'Linus',
  'Hedy',
  'John',
  'Katherine',
  'Tim',
  'Sophie',
  'Niklaus',
  'Karen',
  'Leslie',
];
const LAST = Array.from(
  { length: 50 },
  (_, i) => `Surname${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26))}x`,
);
const YEARS_MS = 3 * 365 * 86_400_000;

/**
 * Read-model rows straight into the contacts projector's tables (the event store does not hold
 * them: projecting a million ContactCreated events one by one would take minutes and measure the
 * projector, not the reads). Contact n: `user<n>@example<n % 1000>.test`, named from 20 first
 * and 50 last names, created evenly over the last three years, sources rotating, 70% seen at a
 * hashed instant of the last year (so names are not correlated with the order) and 30% never seen. Every contact is in the default audience; custom audience k holds
 * the contacts with n % 10 = k, and one in seven of those left it again 0 to 60 days after joining.
 */
const SEED_CONTACTS = `
INSERT INTO contacts (workspace_id, id, email, name, notes, attributes, source, last_seen_at, created_at, updated_at)
SELECT $1, 'con_' || lpad(to_hex(n), 24, '0'), format('user%s@example%s.test', n, n % ${DOMAINS}),
       ($3::text[])[n % 20 + 1] || ' ' || ($4::text[])[(n / 20) % 50 + 1], NULL, '{}'::jsonb,
       (ARRAY['manual', 'auto', 'form'])[n % 3 + 1],
       CASE WHEN (hashint4(n) & 1023) < 717 THEN now() - (((hashint4(n + 1)::bigint & 2147483647) % 31536000) || ' seconds')::interval END,
       now() - ((${CONTACTS} - n) * (${YEARS_MS}::bigint / ${CONTACTS}) || ' milliseconds')::interval,
       now() - ((${CONTACTS} - n) * (${YEARS_MS}::bigint / ${CONTACTS}) || ' milliseconds')::interval
FROM generate_series($2::int, $5::int) AS n`;

const SEED_MEMBERS = `
INSERT INTO audience_members (workspace_id, audience_id, contact_id, joined_at, left_at)
SELECT c.workspace_id, $2, c.id, c.created_at, NULL FROM contacts c WHERE c.workspace_id = $1
UNION ALL
SELECT c.workspace_id, ($3::text[])[n % 10], c.id, c.created_at,
       CASE WHEN n % 7 = 0 AND c.created_at + ((n % 61) || ' days')::interval < now() THEN c.created_at + ((n % 61) || ' days')::interval END
FROM (SELECT *, ('x' || right(id, 8))::bit(32)::int AS n FROM contacts WHERE workspace_id = $1) c
WHERE c.n % 10 BETWEEN 1 AND ${CUSTOM_AUDIENCES}`;

/** Seeds the read model (see SEED_CONTACTS); answers the number of membership rows. */
export async function seedContacts(
  url: string,
  workspaceId: string,
  defaultId: string,
  custom: string[],
): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {}); // the drop at the end may cut it; the seed's own errors are thrown by query()
  await client.connect();
  try {
    const indexNames = [...contactsProjector.indexes!('public').matchAll(/INDEX IF NOT EXISTS (\w+)/g)].map(
      (m) => m[1],
    );
    for (const name of indexNames) await client.query(`DROP INDEX IF EXISTS ${name}`);
    const CHUNK = 250_000;
    for (let from = 1; from <= CONTACTS; from += CHUNK) {
      await client.query(SEED_CONTACTS, [workspaceId, from, FIRST, LAST, Math.min(CONTACTS, from + CHUNK - 1)]);
    }
    await client.query(SEED_MEMBERS, [workspaceId, defaultId, custom]);
    await client.query(`
      INSERT INTO audience_member_hours (audience_id, hour, joins, leaves)
      SELECT audience_id, hour, sum(joins)::int, sum(leaves)::int FROM (
        SELECT audience_id, date_trunc('hour', joined_at AT TIME ZONE 'UTC') AS hour, 1 AS joins, 0 AS leaves FROM audience_members
        UNION ALL
        SELECT audience_id, date_trunc('hour', left_at AT TIME ZONE 'UTC'), 0, 1 FROM audience_members WHERE left_at IS NOT NULL
      ) c GROUP BY 1, 2`);
    await client.query(`
      INSERT INTO audience_member_days (audience_id, day, joins, leaves)
      SELECT audience_id, date_trunc('day', hour), sum(joins)::int, sum(leaves)::int FROM audience_member_hours GROUP BY 1, 2`);
    // What the projector keeps for counting each person once: each contact's custom audiences, and contacts per such set.
    await client.query(
      `
      INSERT INTO contact_audience_sets (contact_id, workspace_id, audience_ids)
      SELECT contact_id, workspace_id, array_agg(audience_id ORDER BY audience_id) FROM audience_members
      WHERE left_at IS NULL AND audience_id <> $1 GROUP BY 1, 2`,
      [defaultId],
    );
    await client.query(`
      INSERT INTO audience_set_counts (workspace_id, audience_ids, contacts)
      SELECT workspace_id, audience_ids, count(*)::int FROM contact_audience_sets GROUP BY 1, 2`);
    await client.query(
      `UPDATE audiences a SET member_count = m.n FROM (SELECT audience_id, count(*)::int AS n FROM audience_members WHERE left_at IS NULL GROUP BY 1) m WHERE a.id = m.audience_id`,
    );
    await client.query(contactsProjector.indexes!('public'));
    // As autovacuum would leave them: statistics, and a visibility map for index-only scans.
    await client.query(
      'VACUUM ANALYZE contacts, audience_members, audience_member_hours, audience_member_days, audiences, contact_audience_sets, audience_set_counts',
    );
    return Number((await client.query('SELECT count(*) AS n FROM audience_members')).rows[0].n);
  } finally {
    await client.end();
  }
}

interface Page {
  data: unknown[];
}

export async function contactsBench(): Promise<void> {
  const database = await freshDatabase('contacts');
  let server: Awaited<ReturnType<typeof startServer>> | null = null;
  try {
    const system = await openSystem(database.url, { poolSize: 4 });
    const ws = await createWorkspace(system.commands, { name: 'Bench contacts', ownerEmail: 'owner@bench.test' });
    await system.close();
    server = await startServer(database.url);
    const base = server.baseUrl;
    const keys = [
      ws.apiKey,
      ...(await createKeys(base, ws.apiKey, 19, ['contacts:read', 'audiences:read', 'audiences:write'])),
    ];
    let turn = 0;
    const call = async <T>(method: string, path: string, body?: unknown): Promise<T> => {
      const res = await fetch(`${base}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${keys[turn++ % keys.length]}`,
          ...(body ? { 'content-type': 'application/json' } : {}),
        },
        ...(body ? { body: JSON.stringify(body) } : {}),
      });
      const json: unknown = await res.json();
      if (res.status >= 300) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
      return json as T;
    };
    // The default audience (made by the first list) and nine more, through the API.
    const defaultId = (await call<{ data: { id: string }[] }>('GET', '/audiences')).data[0]!.id;
    const custom: string[] = [];
    for (let k = 1; k <= CUSTOM_AUDIENCES; k++)
      custom.push((await call<{ id: string }>('POST', '/audiences', { name: `Audience ${k}` })).id);

    note(`contacts: seeding ${CONTACTS} contacts and their memberships as read-model rows`);
    const started = process.hrtime.bigint();
    const memberships = await seedContacts(database.url, ws.workspaceId, defaultId, custom);
    await emit({
      bench: 'contacts.seed',
      contacts: CONTACTS,
      membershipRows: memberships,
      audiences: 1 + CUSTOM_AUDIENCES,
      seconds: round(msSince(started) / 1000, 1),
      via: 'SQL into the read model',
    });

    const measure = async (
      kind: string,
      max: number,
      budgetMs: number,
      path: (i: number) => string,
      target: string,
      extra: Record<string, unknown> = {},
    ) => {
      for (let i = 0; i < 5; i++) await call<unknown>('GET', path(i)); // untimed warm-up
      const samples = new Samples(max);
      const t0 = Date.now();
      let rows = 0;
      for (let i = 0; i < max && Date.now() - t0 < budgetMs; i++) {
        const body = await samples.time(() => call<Page & { audiences?: unknown[] }>('GET', path(i)));
        rows += body.data?.length ?? body.audiences?.length ?? 0;
      }
      const [p50, p99] = samples.percentiles();
      await emit({
        bench: 'contacts.get',
        kind,
        requests: samples.length,
        rowsSeen: rows,
        p50Ms: p50,
        p99Ms: p99,
        contacts: CONTACTS,
        ...extra,
        target,
      });
    };
    const random = (n: number) => 1 + Math.floor(Math.random() * n);
    const q = (s: string) => `/contacts?q=${encodeURIComponent(s)}`;
    note('contacts: list searches and growth over HTTP');
    await measure('list.first.limit50', 200, 15_000, () => '/contacts', 'p99 < 20 ms');
    await measure(
      'q.address',
      200,
      20_000,
      () => {
        const n = random(CONTACTS);
        return q(`user${n}@example${n % DOMAINS}.test`);
      },
      'p99 < 20 ms',
      { matches: 1 },
    );
    await measure('q.address.prefix', 200, 20_000, () => q(`user${random(CONTACTS)}@`), 'p99 < 20 ms', {
      matches: '1 to 11',
    });
    await measure('q.domain', 200, 20_000, () => q(`@example${random(DOMAINS) - 1}.test`), 'p99 < 20 ms', {
      matches: CONTACTS / DOMAINS,
    });
    await measure('q.name', 200, 20_000, () => q(`${FIRST[random(20) - 1]} ${LAST[random(50) - 1]}`), 'p99 < 20 ms', {
      matches: CONTACTS / 1000,
    });
    await measure('q.common', 100, 20_000, () => q(FIRST[random(20) - 1]!.toLowerCase()), 'p99 < 20 ms', {
      matches: CONTACTS / 20,
    });
    await measure('growth.all.days30', 200, 30_000, () => '/audiences/growth', 'p99 < 200 ms', {
      audiences: 1 + CUSTOM_AUDIENCES,
    });
    await measure(
      'growth.all.days30.hour',
      100,
      30_000,
      () => '/audiences/growth?grain=hour&offsetMinutes=120',
      'p99 < 200 ms',
      { audiences: 1 + CUSTOM_AUDIENCES },
    );
    await measure(
      'growth.custom3.days90',
      100,
      30_000,
      () => `/audiences/growth?days=90&audienceIds=${custom.slice(0, 3).join(',')}`,
      'p99 < 200 ms',
      { audiences: 3 },
    );
    await measure('growth.all.days365', 30, 30_000, () => '/audiences/growth?days=365', 'p99 < 200 ms', {
      audiences: 1 + CUSTOM_AUDIENCES,
    });
    await measure('growth.all.days1095', 20, 30_000, () => '/audiences/growth?days=1095', 'p99 < 200 ms', {
      audiences: 1 + CUSTOM_AUDIENCES,
    });
  } finally {
    await server?.close().catch(() => {});
    await database.drop();
  }
}
