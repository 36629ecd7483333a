/**
 * The service in a process of its own, for tests that must see it stay up (a database restart):
 * opens the system on argv[2], makes argv[3] workspaces, listens on a free port and says
 * `{type: 'ready', url, keys}` over IPC. Options for `openSystem` may come as JSON in argv[4].
 */
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve } from '../../system.ts';
import { TEST_SECRETS_KEY } from './secrets.ts';

const [url, workspaces, options] = process.argv.slice(2);
const system = await openSystem(url!, { secretsKey: TEST_SECRETS_KEY, ...(options ? JSON.parse(options) : {}) });
const keys: string[] = [];
for (let i = 0; i < Number(workspaces ?? 0); i++) {
  keys.push(
    (await createWorkspace(system.commands, { name: `Workspace ${i}`, ownerEmail: `owner${i}@example.com` })).apiKey,
  );
}
const app = await serve(system);
const address = await app.listen({ port: 0, host: '127.0.0.1' });
process.send!({ type: 'ready', url: address, keys });
