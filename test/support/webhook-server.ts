/**
 * A service process for crash tests: opens the system on argv[2] (with NATS at argv[3] when given)
 * and delivers webhooks to loopback receivers; says `ready` over IPC. Killed with SIGKILL by the test.
 */
import { openSystem } from '../../system.ts';
import { TEST_SECRETS_KEY } from './secrets.ts';

const [url, natsUrl, queue] = process.argv.slice(2);
await openSystem(url!, {
  secretsKey: TEST_SECRETS_KEY,
  natsUrl: natsUrl || undefined,
  // The deliveries are written by the test's own process: looked for every 50 ms, not every second.
  webhooks: { allowPrivate: true, pollMs: 20, idleMs: 50, timeoutMs: 30_000, queue: queue! },
});
process.send!({ type: 'ready' });
