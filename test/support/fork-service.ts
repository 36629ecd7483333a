import { type ChildProcess, fork } from 'node:child_process';
import { runnable } from './paths.ts';

/** The service (./service-process.ts) in a process of its own, so a test can kill it by SIGKILL. */
export function forkService(databaseUrl: string, options: object): { child: ChildProcess; ready: Promise<unknown> } {
  const child = fork(runnable('test/support/service-process'), [databaseUrl, '0', JSON.stringify(options)], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ready = new Promise((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve(m));
    child.on('exit', (code) => reject(new Error(`service exited with ${code} before it was ready`)));
  });
  return { child, ready };
}
