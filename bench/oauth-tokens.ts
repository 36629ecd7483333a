import http from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import { AccountCodes } from '../commands/accounts/codes.ts';
import { formFields, pkce } from '../test/support/accounts.ts';
import {
  concurrently,
  createKeys,
  emit,
  freshDatabase,
  msSince,
  note,
  postgresCpuMeter,
  round,
  Samples,
  startServer,
  type BenchServer,
} from './support.ts';

const CONNECTIONS = 64;
const DURATION_S = 10;
/** The warm-up runs at the measured load, so every pool connection has prepared both kinds' statements before a figure is taken. */
const WARMUP_S = 2;
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/**
 * Each round loads tokens and keys for DURATION_S each, in SLICES slices of each kind ordered
 * ABBA BAAB twice: the machine's speed drifts over seconds (checkpoints, autovacuum, the service's
 * own background work), and in short alternating slices a drift falls on both kinds alike
 * instead of on whichever ran second (10 s blocks swung a round from 0.73x to 1.0x).
 */
const ABBA_BAAB = ['token', 'key', 'key', 'token', 'key', 'token', 'token', 'key'] as const;
const SLICE_ORDER = [...ABBA_BAAB, ...ABBA_BAAB];
const SLICES = SLICE_ORDER.length / 2;
/** 30 workspaces x 20 keys, and as many approvals (30 owners x 20 apps): 600 credentials of each kind. */
const WORKSPACES = 30;
const PER_WORKSPACE = 20;
const ROWS_PER_WORKSPACE = 1000;
/** Refresh chains run side by side, each renewing its own approval's tokens in turn. */
const CHAINS = 16;
/** Codes made, then exchanged, per round. */
const CODES_PER_ROUND = 300;
const SETUP_CONCURRENCY = 16;
const CALLBACK = 'https://app.bench.test/callback';
const SCOPE = 'settings:read';
/**
 * Requests without a credential (the pages, `/oauth/token`) count against the rate limit by
 * client address, 600 a minute; the bench's own calls come from as many loopback addresses
 * (127.0.1.1 to .200, all of 127/8 is the machine's own on Linux) as apps behind many addresses
 * would, so the limit is not what is measured.
 */
const LOOPBACKS = 200;

interface Slice {
  result: autocannon.Result;
  cpuSeconds: number;
  postgresCpuSeconds: number;
}

const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);

interface Connected {
  access: string;
  refresh: string;
  clientId: string;
}

/**
 * An OAuth access token against an API key on the same cheap read, side by side in one run, and
 * the rate of token refreshes and code exchanges (issue 20). Every token is made the way an app
 * gets one, over HTTP against the service in its own process: the owner of each of 30 workspaces
 * signs in with the mailed code (made here from the server key in the database, as the mail
 * process makes it: the bench reads no mail), goes to the authorization page with PKCE S256,
 * approves, and the app exchanges the code; 20 apps per owner, so 600 approvals, each its own
 * rate-limit allowance, as 600 keys (20 per workspace) are on the key side.
 *
 * - `GET /suppressions?limit=25` (1,000 rows per workspace) with autocannon at 64 connections,
 *   round-robin over the 600 tokens, then over the 600 keys, ROUNDS times (BENCH_ROUNDS, 3);
 *   each round's ratio from 2 x SLICES runs back to back at the same load (SLICE_ORDER). A
 *   round's p50 and p99 are the highest of its slices'.
 * - Refreshes: CHAINS chains each renewing its approval's tokens (`grant_type=refresh_token`,
 *   rotating: each answer's refresh token is the next request's) for 10 s.
 * - Code exchanges: CODES_PER_ROUND codes made through the consent form, then all exchanged
 *   (`grant_type=authorization_code` with the PKCE verifier), CHAINS at a time.
 */
export async function oauthTokensBench(): Promise<void> {
  const database = await freshDatabase('oauth');
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'wms-bench-oauth-'));
  const agents = Array.from(
    { length: LOOPBACKS },
    (_, i) => new http.Agent({ keepAlive: true, localAddress: `127.0.1.${i + 1}` }),
  );
  let server: BenchServer | undefined;
  try {
    server = await startServer(database.url, WORKSPACES, { dataDir });
    const client = new Client(server.baseUrl, agents);
    const keys = await prepareKeys(server, database.url);
    const setup = await connectAll(server, database.url, client);
    const tokens = setup.connected;
    await analyzeSeededTables(database.url);

    const gets = new Map<string, { reqPerSec: number; p99Ms: number }[]>();
    const lists = { token: tokens.map((t) => t.access), key: keys };
    for (const credential of ['token', 'key'] as const) await load(server, lists[credential], CONNECTIONS, WARMUP_S);
    for (let r = 1; r <= ROUNDS; r++) {
      const slices = { token: [] as Slice[], key: [] as Slice[] };
      for (const credential of SLICE_ORDER) {
        const cpuBefore = await server.cpuSeconds();
        const postgresCpu = postgresCpuMeter();
        const result = await load(server, lists[credential], CONNECTIONS, DURATION_S / SLICES);
        slices[credential].push({
          result,
          cpuSeconds: (await server.cpuSeconds()) - cpuBefore,
          postgresCpuSeconds: postgresCpu(),
        });
      }
      for (const credential of ['token', 'key'] as const) {
        const done = slices[credential];
        const requests = sum(done.map((s) => s.result.requests.total));
        const seconds = sum(done.map((s) => s.result.duration));
        const figure = {
          reqPerSec: round(requests / seconds),
          p50Ms: Math.max(...done.map((s) => s.result.latency.p50)),
          p99Ms: Math.max(...done.map((s) => s.result.latency.p99)),
        };
        gets.set(credential, [...(gets.get(credential) ?? []), figure]);
        const statusCodes: Record<string, number> = {};
        for (const s of done)
          for (const [code, stat] of Object.entries(s.result.statusCodeStats ?? {}))
            statusCodes[code] = (statusCodes[code] ?? 0) + (stat.count ?? 0);
        await emit({
          bench: 'oauth.get',
          credential,
          round: r,
          ...figure,
          non2xx: sum(done.map((s) => s.result.non2xx)),
          statusCodes,
          errors: sum(done.map((s) => s.result.errors)),
          timeouts: sum(done.map((s) => s.result.timeouts)),
          serverCpuMsPerRequest: round((sum(done.map((s) => s.cpuSeconds)) * 1000) / requests, 3),
          postgresCpuMsPerRequest: round((sum(done.map((s) => s.postgresCpuSeconds)) * 1000) / requests, 3),
          credentials: lists[credential].length,
          connections: CONNECTIONS,
          durationSec: round(seconds),
        });
      }
    }
    const byToken = gets.get('token')!;
    const byKey = gets.get('key')!;
    await emit({
      bench: 'oauth.get.ratio',
      tokenReqPerSec: byToken.map((f) => f.reqPerSec),
      keyReqPerSec: byKey.map((f) => f.reqPerSec),
      ratio: byToken.map((f, i) => round(f.reqPerSec / byKey[i]!.reqPerSec, 2)),
      p99Ratio: byToken.map((f, i) => round(f.p99Ms / byKey[i]!.p99Ms, 2)),
      target: 'token >= 0.85 x key req/s',
    });

    // The chains renew tokens the GET rounds no longer use.
    const chains = tokens.slice(0, CHAINS);
    for (let r = 1; r <= ROUNDS; r++) await refreshRound(server, client, chains, r);
    for (let r = 1; r <= ROUNDS; r++) await exchangeRound(server, client, setup, r);
  } finally {
    await server?.close().catch(() => NaN);
    for (const a of agents) a.destroy();
    await database.drop();
    await rm(dataDir, { recursive: true, force: true });
  }
}

/** The seeded page and both admissions' tables were filled moments ago: their statistics, as autovacuum would leave them, before the first plan is made. */
async function analyzeSeededTables(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      'VACUUM ANALYZE suppressions, api_keys, roles, oauth_access_tokens, oauth_grants, workspaces, memberships, member_grants, step_up_elevations',
    );
  } finally {
    await client.end();
  }
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Plain HTTP/1.1 calls from the loopback addresses in turn, kept alive per address. */
class Client {
  private next = 0;

  constructor(
    private readonly baseUrl: string,
    private readonly agents: http.Agent[],
  ) {}

  request(method: string, url: string, options: { form?: Record<string, string>; cookie?: string } = {}) {
    const body = options.form ? new URLSearchParams(options.form).toString() : undefined;
    const agent = this.agents[this.next++ % this.agents.length]!;
    return new Promise<Answer>((resolve, reject) => {
      const req = http.request(
        new URL(url, this.baseUrl),
        {
          method,
          agent,
          headers: {
            ...(body !== undefined
              ? { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) }
              : {}),
            ...(options.cookie ? { cookie: options.cookie } : {}),
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }),
          );
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(body);
    });
  }
}

/** 20 keys per workspace (the owner's and 19 more) and the suppressions both kinds read. */
async function prepareKeys(server: BenchServer, url: string): Promise<string[]> {
  const keys: string[] = [];
  for (const ws of server.workspaces)
    keys.push(ws.apiKey, ...(await createKeys(server.baseUrl, ws.apiKey, PER_WORKSPACE - 1, [SCOPE])));
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO suppressions (workspace_id, id, email, reason, detail, removable, created_at)
       SELECT w, gen_random_uuid(), format('seed%s@example%s.test', n, n % 50), 'manual', null, true,
              timestamptz '2025-01-01' + n * interval '1 second'
       FROM unnest($1::text[]) AS w, generate_series(1, $2::int) AS n`,
      [server.workspaces.map((w) => w.workspaceId), ROWS_PER_WORKSPACE],
    );
  } finally {
    await client.end();
  }
  return keys;
}

const expect = (answer: Answer, status: number, what: string): Answer => {
  if (answer.status !== status) throw new Error(`${what} answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  return answer;
};

interface Setup {
  /** One approval per owner and app, owners in the server's order, apps within. */
  connected: Connected[];
  cookies: string[];
  clientIds: string[];
}

/** Signs the owners in, registers the apps, and connects every app for every owner. */
async function connectAll(server: BenchServer, url: string, client: Client): Promise<Setup> {
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  let codes: AccountCodes;
  try {
    codes = new AccountCodes(
      (await db.query("SELECT value FROM server_secrets WHERE name = 'accounts'")).rows[0].value as Buffer,
    );
  } finally {
    await db.end();
  }
  const cookies: string[] = [];
  for (let i = 0; i < server.workspaces.length; i++) {
    const asked = expect(
      await client.request('POST', '/sign-in', { form: { email: `owner${i}@bench.test` } }),
      200,
      'sign-in',
    );
    const challenge = /name="challenge" value="([^"]+)"/.exec(asked.body)![1]!;
    const answered = expect(
      await client.request('POST', '/sign-in/code', { form: { challenge, code: codes.signInCode(challenge) } }),
      303,
      'sign-in code',
    );
    cookies.push(String(answered.headers['set-cookie']).split(';')[0]!);
  }
  const clientIds: string[] = [];
  for (let j = 0; j < PER_WORKSPACE; j++) {
    const registered = expect(
      await client.request('POST', '/account/apps', {
        form: { name: `Bench app ${j}`, redirect_uris: CALLBACK },
        cookie: cookies[0]!,
      }),
      201,
      'registration',
    );
    clientIds.push(/<code id="client-id">([^<]+)<\/code>/.exec(registered.body)![1]!);
  }
  const setup: Setup = { connected: [], cookies, clientIds };
  const pairs = cookies.flatMap((cookie, i) =>
    clientIds.map((clientId, j) => ({ cookie, clientId, at: i * PER_WORKSPACE + j })),
  );
  const started = process.hrtime.bigint();
  let next = 0;
  await concurrently(SETUP_CONCURRENCY, async () => {
    while (next < pairs.length) {
      const pair = pairs[next++]!;
      const { code, verifier } = await approve(client, pair.cookie, pair.clientId);
      const tokens = JSON.parse(expect(await exchange(client, pair.clientId, code, verifier), 200, 'exchange').body);
      setup.connected[pair.at] = {
        access: tokens.access_token,
        refresh: tokens.refresh_token,
        clientId: pair.clientId,
      };
    }
  });
  const seconds = msSince(started) / 1000;
  note(`oauth-tokens: ${pairs.length} apps connected in ${round(seconds)} s`);
  await emit({
    bench: 'oauth.connect',
    connections: pairs.length,
    concurrency: SETUP_CONCURRENCY,
    seconds: round(seconds),
    flowsPerSec: round(pairs.length / seconds),
  });
  return setup;
}

/** The consent page and its approval: the code the app is sent back with. */
async function approve(client: Client, cookie: string, clientId: string): Promise<{ code: string; verifier: string }> {
  const { verifier, challenge } = pkce();
  const query = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: CALLBACK,
    scope: SCOPE,
    state: 'bench',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  });
  const consent = expect(await client.request('GET', `/oauth/authorize?${query}`, { cookie }), 200, 'consent page');
  const approved = expect(
    await client.request('POST', '/oauth/authorize', {
      form: { ...formFields(consent.body), decision: 'approve' },
      cookie,
    }),
    303,
    'approval',
  );
  const code = new URL(String(approved.headers.location)).searchParams.get('code');
  if (!code) throw new Error(`no code in ${approved.headers.location}`);
  return { code, verifier };
}

const exchange = (client: Client, clientId: string, code: string, verifier: string) =>
  client.request('POST', '/oauth/token', {
    form: {
      grant_type: 'authorization_code',
      code,
      redirect_uri: CALLBACK,
      client_id: clientId,
      code_verifier: verifier,
    },
  });

async function refreshRound(server: BenchServer, client: Client, chains: Connected[], n: number): Promise<void> {
  const samples = new Samples();
  const failed: Record<string, number> = {};
  const cpuBefore = await server.cpuSeconds();
  const started = process.hrtime.bigint();
  const deadline = Date.now() + DURATION_S * 1000;
  await concurrently(chains.length, async (c) => {
    const chain = chains[c]!;
    while (Date.now() < deadline) {
      const t0 = process.hrtime.bigint();
      const answer = await client.request('POST', '/oauth/token', {
        form: { grant_type: 'refresh_token', refresh_token: chain.refresh, client_id: chain.clientId },
      });
      samples.add(msSince(t0));
      if (answer.status !== 200) {
        failed[answer.status] = (failed[answer.status] ?? 0) + 1;
        return;
      }
      const tokens = JSON.parse(answer.body);
      chain.refresh = tokens.refresh_token;
      chain.access = tokens.access_token;
    }
  });
  const seconds = msSince(started) / 1000;
  const cpu = (await server.cpuSeconds()) - cpuBefore;
  const [p50, p99] = samples.percentiles();
  await emit({
    bench: 'oauth.refresh',
    round: n,
    refreshes: samples.length,
    refreshesPerSec: round(samples.length / seconds),
    p50Ms: p50,
    p99Ms: p99,
    failed,
    serverCpuMsPerRefresh: round((cpu * 1000) / samples.length, 3),
    chains: chains.length,
    durationSec: round(seconds),
  });
}

async function exchangeRound(server: BenchServer, client: Client, setup: Setup, n: number): Promise<void> {
  const approvals: { clientId: string; code: string; verifier: string }[] = [];
  const madeAt = process.hrtime.bigint();
  let next = 0;
  await concurrently(CHAINS, async () => {
    while (next < CODES_PER_ROUND) {
      const n = next++;
      const cookie = setup.cookies[n % setup.cookies.length]!;
      const clientId = setup.clientIds[Math.floor(n / setup.cookies.length) % setup.clientIds.length]!;
      approvals.push({ clientId, ...(await approve(client, cookie, clientId)) });
    }
  });
  const madeSeconds = msSince(madeAt) / 1000;
  const samples = new Samples();
  const failed: Record<string, number> = {};
  const cpuBefore = await server.cpuSeconds();
  const started = process.hrtime.bigint();
  next = 0;
  await concurrently(CHAINS, async () => {
    while (next < approvals.length) {
      const a = approvals[next++]!;
      const answer = await samples.time(() => exchange(client, a.clientId, a.code, a.verifier));
      if (answer.status !== 200) failed[answer.status] = (failed[answer.status] ?? 0) + 1;
    }
  });
  const seconds = msSince(started) / 1000;
  const cpu = (await server.cpuSeconds()) - cpuBefore;
  const [p50, p99] = samples.percentiles();
  await emit({
    bench: 'oauth.exchange',
    round: n,
    exchanges: samples.length,
    exchangesPerSec: round(samples.length / seconds),
    p50Ms: p50,
    p99Ms: p99,
    failed,
    serverCpuMsPerExchange: round((cpu * 1000) / samples.length, 3),
    codesMadePerSec: round(approvals.length / madeSeconds),
    concurrency: CHAINS,
  });
}

let sent = 0;

function load(server: BenchServer, credentials: readonly string[], connections: number, duration: number) {
  return autocannon({
    url: server.baseUrl,
    connections,
    duration,
    requests: [
      {
        method: 'GET',
        path: '/suppressions?limit=25',
        setupRequest: (request) => ({
          ...request,
          headers: { ...request.headers, authorization: `Bearer ${credentials[sent++ % credentials.length]}` },
        }),
      },
    ],
  });
}
