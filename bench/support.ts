import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { POSITION_LOCK } from '../infra/eventstore/postgres-schema.ts';
import type { SystemOptions } from '../system.ts';
import type { ServerReply, ServerRequest } from './child.ts';

/** The PostgreSQL the benchmarks run on (trust auth); each benchmark makes its own database in it. */
export const ADMIN_URL =
  process.env.BENCH_DATABASE_URL ?? process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface Machine {
  cpus: number;
  cpuModel: string;
  memoryGiB: number;
  node: string;
  postgres: string;
  /** 1-minute load average when the figure was taken: other engineers' runs share the cores. */
  load1: number;
}

let postgresVersion: string | undefined;

export async function machine(): Promise<Machine> {
  if (postgresVersion === undefined) {
    const c = new pg.Client({ connectionString: ADMIN_URL });
    await c.connect();
    try {
      postgresVersion = (await c.query('SHOW server_version')).rows[0].server_version.split(' ')[0] as string;
    } finally {
      await c.end();
    }
  }
  return {
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: round(os.totalmem() / 2 ** 30),
    node: process.version,
    postgres: postgresVersion,
    load1: round(os.loadavg()[0]!, 2),
  };
}

/**
 * Prints one figure as one JSON line, with when it was taken and the machine facts at that moment
 * (`npm run bench:report` makes the tables of docs/benchmarks.md from these lines).
 */
export async function emit(figure: Record<string, unknown>): Promise<void> {
  console.log(JSON.stringify({ ...figure, at: new Date().toISOString(), machine: await machine() }));
}

/**
 * The path of a bench script beside this one: compiled (.js) when the bench runs compiled, as
 * `npm run bench` does (a server under tsx carries its loader, about 80 MB of RSS a production
 * build does not), else its source (.ts) under the tsx the bench runs with.
 */
export const besideBench = (name: string) =>
  fileURLToPath(new URL(`./${name}${path.extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** Progress and notes go to stderr, so stdout stays one JSON line per figure. */
export function note(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

export interface FreshDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

const live = new Set<FreshDatabase>();

/** A new, empty database (like the tests' freshDatabase); `drop` removes it, also on Ctrl-C. */
export async function freshDatabase(label: string): Promise<FreshDatabase> {
  const name = `wms_bench_${label.replace(/\W/g, '_')}_${crypto.randomBytes(4).toString('hex')}`;
  await admin(`CREATE DATABASE ${name}`);
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  const db: FreshDatabase = {
    name,
    url: url.toString(),
    drop: async () => {
      if (!live.delete(db)) return;
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
  live.add(db);
  return db;
}

export async function dropAllDatabases(): Promise<void> {
  for (const db of [...live]) await db.drop().catch((e) => note(`could not drop ${db.name}: ${e}`));
}

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/**
 * Runs `sql` in one transaction under the event store's position lock, as es_append draws
 * positions and transaction ids (infra/eventstore/postgres-schema.ts): a seed that writes
 * es_events with SQL then never interleaves with an append.
 */
export async function appendUnderPositionLock(client: pg.Client, sql: string, params: unknown[]): Promise<void> {
  await client.query('BEGIN');
  await client.query('SELECT pg_advisory_xact_lock($1)', [POSITION_LOCK]);
  await client.query(sql, params);
  await client.query('COMMIT');
}

/**
 * Seeds rows 1 to `total` with `sql`, `chunk` at a time, one transaction per chunk under the
 * position lock: `sql` takes the chunk's first and last row as $1 and $2, then `params`.
 * Answers the seconds the chunks took.
 */
export async function seedInChunks(
  client: pg.Client,
  sql: string,
  total: number,
  chunk: number,
  params: unknown[] = [],
): Promise<number> {
  const started = process.hrtime.bigint();
  for (let from = 1; from <= total; from += chunk)
    await appendUnderPositionLock(client, sql, [from, Math.min(total, from + chunk - 1), ...params]);
  return msSince(started) / 1000;
}

/**
 * Polls the checkpoint of `projection` every `everyMs` until it reaches `head` (the seed's last
 * position), noting its progress every 15 s under `label`.
 */
export async function waitForCheckpoint(
  client: pg.Client,
  projection: string,
  head: number,
  options: { everyMs: number; label: string },
): Promise<void> {
  let position = 0;
  let lastNote = Date.now();
  while (position < head) {
    await new Promise((r) => setTimeout(r, options.everyMs));
    position = Number(
      (await client.query('SELECT position FROM projection_checkpoints WHERE name = $1', [projection])).rows[0]
        .position,
    );
    if (Date.now() - lastNote > 15_000) {
      lastNote = Date.now();
      note(`${options.label}: projector at ${position} of ${head}`);
    }
  }
}

/** Nearest-rank percentiles of latency samples (ms), sorted once. */
export function percentiles(samples: ArrayLike<number>, ps: readonly number[] = [50, 99]): number[] {
  const sorted = Float64Array.from(samples).sort();
  if (sorted.length === 0) return ps.map(() => NaN);
  return ps.map((p) =>
    round(sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!, 2),
  );
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Milliseconds since `start` (a process.hrtime.bigint()). */
export function msSince(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

/** Collects latency samples (ms) without growing a JS array per sample. */
export class Samples {
  private data: Float64Array;
  length = 0;

  constructor(capacity = 1024) {
    this.data = new Float64Array(capacity);
  }

  add(ms: number): void {
    if (this.length === this.data.length) {
      const bigger = new Float64Array(this.data.length * 2);
      bigger.set(this.data);
      this.data = bigger;
    }
    this.data[this.length++] = ms;
  }

  /** Times `fn` and records how long it took. */
  async time<T>(fn: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    const result = await fn();
    this.add(msSince(start));
    return result;
  }

  percentiles(ps: readonly number[] = [50, 99]): number[] {
    return percentiles(this.data.subarray(0, this.length), ps);
  }
}

/** Runs `workers` loops concurrently until each returns. */
export async function concurrently(workers: number, loop: (worker: number) => Promise<void>): Promise<void> {
  await Promise.all(Array.from({ length: workers }, (_, w) => loop(w)));
}

export interface BenchServer {
  baseUrl: string;
  /** The server process, for sampling its RSS (`RssSampler`). */
  pid: number;
  /** Wall-clock ms when the server process began opening the system (migrations, projectors). */
  openedAt: number;
  workspaces: { workspaceId: string; apiKey: string }[];
  /** CPU seconds the server process has used so far. */
  cpuSeconds(): Promise<number>;
  /** Stops the server and its projectors; answers the CPU seconds the server process used. */
  close(): Promise<number>;
}

/**
 * Starts the service in a child process (bench/server.ts) on `databaseUrl` with `workspaces` new
 * workspaces; `script` forks another server speaking the same messages instead (the floor,
 * bench/floor-server.ts, or another checkout's bench/server.ts). With BENCH_PROFILE_DIR set, each
 * server writes a CPU profile there when it exits (`node --cpu-prof`).
 */
export async function startServer(
  databaseUrl: string,
  workspaces = 0,
  options: SystemOptions = {},
  script = besideBench('server'),
): Promise<BenchServer> {
  // The child inherits the bench's node flags (tsx's loader when the bench runs under it); a .ts
  // script forked from the compiled bench (BENCH_BASELINE's checkout) gets tsx. Its stdout goes to our stderr.
  const tsx = script.endsWith('.ts') && !process.execArgv.some((a) => a.includes('tsx')) ? ['--import', 'tsx'] : [];
  const args = [databaseUrl, String(workspaces), JSON.stringify(options)];
  const profile = process.env.BENCH_PROFILE_DIR;
  const child = fork(script, args, {
    stdio: ['ignore', 2, 2, 'ipc'],
    execArgv: [...process.execArgv, ...tsx, ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : [])],
  });
  const reply = <T extends ServerReply['type']>(type: T) =>
    new Promise<Extract<ServerReply, { type: T }>>((resolve, reject) => {
      const onMessage = (m: ServerReply) => {
        if (m.type === type) done(() => resolve(m as Extract<ServerReply, { type: T }>));
        else if (m.type === 'failed') done(() => reject(new Error(`bench server failed: ${m.error}`)));
      };
      const onExit = (code: number | null) =>
        done(() => reject(new Error(`bench server exited (${code}) before '${type}'`)));
      const done = (then: () => void) => {
        child.off('message', onMessage);
        child.off('exit', onExit);
        then();
      };
      child.on('message', onMessage);
      child.on('exit', onExit);
    });
  const ready = await reply('ready');
  return {
    baseUrl: `http://127.0.0.1:${ready.port}`,
    pid: child.pid!,
    openedAt: ready.openedAt,
    workspaces: ready.workspaces,
    cpuSeconds: async () => {
      const answer = reply('cpu');
      child.send({ type: 'cpu' } satisfies ServerRequest);
      return (await answer).cpuSeconds;
    },
    close: async () => {
      const closed = reply('closed');
      child.send({ type: 'close' } satisfies ServerRequest);
      const { cpuSeconds } = await closed;
      return cpuSeconds;
    },
  };
}

/**
 * The resident memory of another process (Linux: /proc/<pid>/status), sampled every `everyMs`
 * from `start` until `stop`, which answers the first, peak and last samples in MB. The kernel's
 * own peak (VmHWM) would count the process's start-up too; a sample counts only the run.
 */
export class RssSampler {
  private first = 0;
  private peak = 0;
  private last = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly pid: number,
    private readonly everyMs = 100,
  ) {}

  start(): this {
    const sample = () => {
      const mb = rssMbOf(this.pid);
      if (mb === null) return;
      if (this.first === 0) this.first = mb;
      this.peak = Math.max(this.peak, mb);
      this.last = mb;
    };
    sample();
    this.timer = setInterval(sample, this.everyMs);
    return this;
  }

  stop(): { rssStartMb: number; rssPeakMb: number; rssEndMb: number } {
    clearInterval(this.timer);
    return { rssStartMb: round(this.first), rssPeakMb: round(this.peak), rssEndMb: round(this.last) };
  }
}

/** A process's resident set in MB, null once it is gone. */
export function rssMbOf(pid: number): number | null {
  try {
    const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
    return kb === undefined ? null : Number(kb) / 1024;
  } catch {
    return null;
  }
}

/**
 * Starts counting the CPU (user and system) of this machine's PostgreSQL processes from now: the
 * answer reads the seconds spent since. Counted per process, so a session that a pool closes
 * meanwhile takes away only what it spent after the start, never what it spent before. With `database`, the sessions of other databases are left out (what
 * else runs on the machine); the shared processes (WAL writer, checkpointer, ...) still count.
 */
export function postgresCpuMeter(database?: string): () => number {
  const start = postgresProcesses(database);
  return () => {
    let total = 0;
    for (const [pid, seconds] of postgresProcesses(database)) total += seconds - (start.get(pid) ?? 0);
    return total;
  };
}

/** The CPU seconds each PostgreSQL process alive now has spent, by pid; of one database's sessions with `database`. */
function postgresProcesses(database?: string): Map<number, number> {
  const seconds = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    const stat = processStat(pid);
    if (!stat?.name.startsWith('postgres')) continue;
    if (database !== undefined) {
      const session = sessionDatabase(pid);
      if (session !== undefined && session !== database) continue;
    }
    seconds.set(pid, stat.cpuSeconds);
  }
  return seconds;
}

/**
 * The database a PostgreSQL process works for, from the title it sets: a session's ("postgres:
 * [<cluster>: ]<user> <database> <host>(<port>) <state>") or an autovacuum worker's; undefined for a
 * process every database shares.
 */
function sessionDatabase(pid: number): string | undefined {
  try {
    const title = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    const session =
      /^postgres: (?:\S+: )?\S+ (\S+) (?:\S+\(\d+\)|\[local\])/.exec(title) ??
      /^postgres: (?:\S+: )?autovacuum worker (\S+)/.exec(title);
    return session ? session[1] : undefined;
  } catch {
    return undefined;
  }
}

/** A process's name and the CPU seconds (user and system) it has spent so far; null once it is gone. */
function processStat(pid: number): { name: string; cpuSeconds: number } | null {
  const tick = 100; // USER_HZ on Linux
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const close = stat.lastIndexOf(')');
    const fields = stat.slice(close + 2).split(' ');
    return {
      name: stat.slice(stat.indexOf('(') + 1, close),
      cpuSeconds: (Number(fields[11]) + Number(fields[12])) / tick,
    };
  } catch {
    return null;
  }
}

/** The CPU seconds (user and system) a process has spent so far; 0 once it is gone. */
export const cpuSecondsOf = (pid: number): number => processStat(pid)?.cpuSeconds ?? 0;

/** How many times createKeys sends one key's request while it answers 503 or 409. */
const KEY_ATTEMPTS = 30;

/** Adds keys to a workspace through POST /keys (the owner key is one of its at most 20 active keys). */
export async function createKeys(
  baseUrl: string,
  ownerKey: string,
  count: number,
  scopes: string[],
): Promise<string[]> {
  const tokens: string[] = [];
  for (let i = 0; i < count; i++) {
    // On a loaded machine the read models may pass their deadline (503): the same request again
    // under its Idempotency-Key answers the key it made, not a second one.
    // At most KEY_ATTEMPTS tries a second apart, so a service that never recovers fails the bench.
    const idempotencyKey = crypto.randomUUID();
    let res: Response;
    for (let attempt = 1; ; attempt++) {
      res = await fetch(`${baseUrl}/keys`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${ownerKey}`,
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        body: JSON.stringify({ name: `bench ${i}`, scopes }),
      });
      if (res.status !== 503 && res.status !== 409) break;
      const text = await res.text();
      if (attempt === KEY_ATTEMPTS)
        throw new Error(`POST /keys refused ${KEY_ATTEMPTS} times; the last answered ${res.status}: ${text}`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const body = (await res.json()) as { token?: string };
    if (res.status !== 201 || !body.token)
      throw new Error(`POST /keys answered ${res.status}: ${JSON.stringify(body)}`);
    tokens.push(body.token);
  }
  return tokens;
}
