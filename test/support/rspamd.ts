import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { freeTcpPort } from './dns-server.ts';

/** Whether Debian's rspamd is installed (`apt-get install rspamd`); tests that need it skip without. */
export function rspamdInstalled(): boolean {
  return spawnSync('rspamd', ['--version'], { stdio: 'ignore' }).status === 0;
}

/**
 * A real rspamd of our own (not the system service): the packaged configuration with its normal
 * worker on a free loopback port, the controller and proxy off, DNS asked of `dnsServer` (the
 * loopback test server, so RBL and SPF lookups answer at once), logs and state in a temporary
 * folder. Compiled regular expressions (hyperscan) are cached across runs in one folder under
 * the system's temporary folder: the first start compiles them, which takes a minute or more.
 */
export async function startRspamd(t: { teardown(fn: () => Promise<void> | void): void }, dnsServer: string) {
  const dir = await mkdtemp(path.join(tmpdir(), 'wms-rspamd-'));
  const cache = path.join(tmpdir(), 'wms-rspamd-cache');
  await mkdir(path.join(dir, 'override.d'), { recursive: true });
  await mkdir(path.join(dir, 'run'));
  await mkdir(cache, { recursive: true });
  const port = await freeTcpPort();
  const override = (name: string, text: string) => writeFile(path.join(dir, 'override.d', name), text);
  await override('worker-normal.inc', `bind_socket = "127.0.0.1:${port}";\ncount = 1;\n`);
  await override('worker-controller.inc', `enabled = false;\nbind_socket = "127.0.0.1:${await freeTcpPort()}";\n`);
  await override('worker-proxy.inc', `enabled = false;\nbind_socket = "127.0.0.1:${await freeTcpPort()}";\n`);
  await override('logging.inc', `type = "file";\nfilename = "${dir}/rspamd.log";\nlevel = "error";\n`);
  await override(
    'options.inc',
    `dns { nameserver = ["${dnsServer}"]; timeout = 1s; retransmits = 1; }\npidfile = "${dir}/run/rspamd.pid";\n`,
  );
  const child: ChildProcess = spawn(
    'rspamd',
    [
      '-f',
      '-i',
      '-c',
      '/etc/rspamd/rspamd.conf',
      '--var',
      `LOCAL_CONFDIR=${dir}`,
      '--var',
      `DBDIR=${cache}`,
      '--var',
      `RUNDIR=${dir}/run`,
      '--var',
      `LOGDIR=${dir}`,
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGTERM');
    // Unreferenced: a pending timer kept the test's process alive 10 s after rspamd had exited.
    await Promise.race([exited, sleep(10_000, undefined, { ref: false })]);
    if (child.exitCode === null) child.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 240_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`rspamd exited with ${child.exitCode}; see its log in ${dir}`);
    const pong = await fetch(`${url}/ping`, { signal: AbortSignal.timeout(2000) }).then(
      (r) => r.ok,
      () => false,
    );
    if (pong) return { url };
    if (Date.now() > deadline) throw new Error('rspamd did not answer /ping within 240 s');
    await sleep(100);
  }
}
