import { fork } from 'node:child_process';
import t from 'tap';
import { createContact } from '../../commands/contacts/handlers.ts';
import { createWorkspace } from '../../commands/workspaces/handlers.ts';
import { openSystem, serve } from '../../system.ts';
import { freshDatabase } from '../support/database.ts';
import { eventually } from '../support/receiver.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';
import { runnable } from '../support/paths.ts';

const MINUTE_MS = 300;

function startServer(url: string) {
  const child = fork(runnable('test/support/automation-server'), [url, String(MINUTE_MS)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const ready = new Promise<void>((resolve, reject) => {
    child.on('message', (m: { type: string }) => m.type === 'ready' && resolve());
    child.on('exit', (code) => reject(new Error(`server exited with ${code} before it was ready`)));
  });
  return { child, ready };
}

t.test('a wait timer set by a server that is SIGKILLed fires after another server starts', async (t) => {
  const url = await freshDatabase(t);
  // This process takes requests and follows the log (enrolment), but walks no runs: `deliver: false`.
  const quiet = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, deliver: false });
  const app = await serve(quiet);
  t.teardown(async () => {
    await app.close();
    await quiet.close();
  });
  const ws = await createWorkspace(quiet.commands, { name: 'Crash', ownerEmail: 'owner@crash.test' });
  await createContact(
    quiet.commands,
    { workspaceId: ws.workspaceId, kind: 'system', id: null },
    { email: 'a@example.com', source: 'manual' },
    new Date().toISOString(),
  );
  const call = (method: 'GET' | 'POST', path: string, body?: object) =>
    app
      .inject({
        method,
        url: path,
        headers: { authorization: `Bearer ${ws.apiKey}` },
        ...(body ? { payload: body } : {}),
      })
      .then((r) => r.json());
  const automation = await call('POST', '/automations', {
    name: 'Crash',
    trigger: { event: 'go' },
    steps: [
      { type: 'send', template: 'first' },
      { type: 'wait', minutes: 5 },
      { type: 'send', template: 'after-wait' },
    ],
  });

  const first = startServer(url);
  await first.ready;
  t.same((await call('POST', '/events', { name: 'go', email: 'a@example.com' })).enrolled, [automation.id]);
  const run = await eventually(async () => {
    const { rows } = await quiet.database.pool.query(
      "SELECT status, wake_at FROM automation_runs WHERE status = 'waiting'",
    );
    return rows[0];
  });
  t.same(
    (await call('GET', `/automations/${automation.id}/sends`)).data.map((s: any) => s.template),
    ['first'],
    'the first server walked the run to its wait',
  );
  first.child.kill('SIGKILL');
  await new Promise((r) => first.child.once('exit', r));

  // The wait (5 "minutes", 1.5 s) passes while no process walks runs.
  await new Promise((r) => setTimeout(r, Math.max(0, run.wake_at.getTime() - Date.now()) + 500));
  t.same(
    (await call('GET', `/automations/${automation.id}/sends`)).data.map((s: any) => s.template),
    ['first'],
    'nothing fires while no server runs',
  );

  const second = startServer(url);
  t.teardown(() => {
    second.child.kill('SIGKILL');
  });
  await second.ready;
  const sends = await eventually(async () => {
    const data = (await call('GET', `/automations/${automation.id}/sends`)).data;
    return data.length === 2 && data;
  });
  t.same(
    sends.map((s: any) => s.template),
    ['after-wait', 'first'],
    'the timer fired once, after the restart',
  );
  const { rows } = await quiet.database.pool.query('SELECT status FROM automation_runs');
  t.same(rows, [{ status: 'completed' }]);
});
