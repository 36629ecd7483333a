import pg from 'pg';
import { createKeys, emit, freshDatabase, msSince, note, round, Samples, startServer } from './support.ts';

const WORKSPACES = 1000;
const PER_WORKSPACE = 200;
/** Workspaces with keys, whose lists are requested; the other ones only fill the table. */
const QUERIED = 25;

const WORDS = [
  'Welcome',
  'Password',
  'Receipt',
  'Invoice',
  'Newsletter',
  'Digest',
  'Reminder',
  'Onboarding',
  'Survey',
  'Promotion',
  'Renewal',
  'Shipping',
  'Alert',
  'Verification',
  'Invitation',
  'Feedback',
  'Update',
  'Announcement',
  'Trial',
  'Billing',
];

/**
 * The read model rows of 200 templates per workspace, as the templates projector leaves them
 * (registered, half published with a subject), written straight into the table: the figure is
 * the list query over HTTP, and replaying 800,000 events through the projector would only make
 * the seed slower. Names are `<word> <word> <n>`, so a word matches about a tenth of a workspace.
 */
const SEED = `
INSERT INTO templates (id, workspace_id, registered, name, name_key, slug, description, archived, published_version, latest_version,
                       subject, engine, slots, props, revision, renames, registry_position, created_at, updated_at)
SELECT 'tpl_' || substr(md5(w || '.' || n), 1, 24), w, true, name, lower(name), lower(replace(name, ' ', '-')),
       'Sent for ' || lower(words[1 + (n * 7) % 20]) || ' events', n % 10 = 0, CASE WHEN n % 2 = 0 THEN 1 END, 1 + n % 3,
       CASE WHEN n % 2 = 0 THEN 'Your ' || lower(words[1 + (n * 3) % 20]) || ' is here' END,
       CASE WHEN n % 2 = 0 THEN 'blocks' END, CASE WHEN n % 2 = 0 THEN '[]'::jsonb END, CASE WHEN n % 2 = 0 THEN '[]'::jsonb END,
       3, 0, 1, created, created + (n % 17) * interval '1 hour'
FROM unnest($1::text[]) AS w,
     generate_series(1, ${PER_WORKSPACE}) AS n,
     LATERAL (SELECT $2::text[] AS words) v,
     LATERAL (SELECT words[1 + n % 20] || ' ' || words[1 + (n / 20) % 20] || ' ' || n AS name,
                     timestamptz '2026-01-01 00:00:00+00' + n * interval '1 minute' AS created) x`;

interface Page {
  data: { id: string }[];
  hasMore: boolean;
  nextCursor: string | null;
}

export async function templatesListBench(): Promise<void> {
  const database = await freshDatabase('templates_list');
  const server = await startServer(database.url, QUERIED);
  try {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    const workspaceIds = [...server.workspaces.map((w) => w.workspaceId)];
    for (let i = workspaceIds.length; i < WORKSPACES; i++) workspaceIds.push(`ws_${i.toString(16).padStart(24, '0')}`);
    note(`templates-list: seeding ${WORKSPACES} workspaces x ${PER_WORKSPACE} templates`);
    const seedStarted = process.hrtime.bigint();
    for (let i = 0; i < workspaceIds.length; i += 100)
      await client.query(SEED, [workspaceIds.slice(i, i + 100), WORDS]);
    await client.query('ANALYZE templates');
    const total = Number((await client.query('SELECT count(*) AS n FROM templates')).rows[0].n);
    await emit({
      bench: 'templates-list.seed',
      rows: total,
      seconds: round(msSince(seedStarted) / 1000, 1),
      via: 'SQL into the read model',
    });
    const someId = (await client.query('SELECT id FROM templates WHERE workspace_id = $1 LIMIT 1', [workspaceIds[0]]))
      .rows[0].id as string;
    await client.end();

    // 600 requests a minute per key: a key per workspace and turns across them.
    const keys = await Promise.all(
      server.workspaces.map(async (w) => (await createKeys(server.baseUrl, w.apiKey, 1, ['templates:read']))[0]!),
    );
    let turn = 0;
    const get = async (query: Record<string, string>): Promise<Page> => {
      const key = keys[turn++ % keys.length]!;
      const res = await fetch(`${server.baseUrl}/templates?${new URLSearchParams(query)}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = (await res.json()) as Page;
      if (res.status !== 200) throw new Error(`GET /templates answered ${res.status}: ${JSON.stringify(body)}`);
      return body;
    };
    const measure = async (kind: string, query: () => Record<string, string>, extra: Record<string, unknown> = {}) => {
      const samples = new Samples(400);
      let rows = 0;
      for (let i = 0; i < 400; i++) rows += (await samples.time(() => get(query()))).data.length;
      const [p50, p99] = samples.percentiles();
      await emit({
        bench: 'templates-list.get',
        kind,
        requests: samples.length,
        meanRows: round(rows / samples.length, 1),
        p50Ms: p50,
        p99Ms: p99,
        ...extra,
        tableRows: total,
        target: 'search p99 < 15 ms',
      });
    };
    const word = () => WORDS[Math.floor(Math.random() * WORDS.length)]!.toLowerCase();
    note('templates-list: lists and searches over HTTP');
    for (let i = 0; i < 50; i++) await get({});
    await measure('list.default', () => ({}));
    await measure('list.name', () => ({ sort: 'name' }));
    await measure('search.one-word', () => ({ search: word() }));
    await measure('search.two-words', () => ({ search: `${word()} ${word()}` }));
    await measure('search.number', () => ({ search: String(1 + Math.floor(Math.random() * PER_WORKSPACE)) }));
    await measure('search.subject', () => ({ search: 'is here' }));
    await measure('search.id', () => ({ search: someId }), { note: 'matches in one workspace of the 25' });
    await measure('search.misspelt', () => ({ search: 'recipt' }), {
      note: 'no exact match: the texts are read and matched for typos, then the page of those that match',
    });
    await measure('search.nothing', () => ({ search: 'zzqxv' }), {
      note: 'the exact page and the texts are read; nothing is close',
    });
  } finally {
    await server.close().catch(() => {});
    await database.drop();
  }
}
