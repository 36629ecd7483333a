/**
 * A service process for the automation crash test: opens the system on argv[2] with short minutes
 * (argv[3] ms each) and says `ready` over IPC. Killed with SIGKILL by the test.
 */
import { openSystem } from '../../system.ts';
import { TEST_SECRETS_KEY } from './secrets.ts';

const [url, minuteMs] = process.argv.slice(2);
await openSystem(url!, { secretsKey: TEST_SECRETS_KEY, automations: { minuteMs: Number(minuteMs), pollMs: 20 } });
process.send!({ type: 'ready' });
