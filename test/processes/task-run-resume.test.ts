import crypto from 'node:crypto';
import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { createLabel } from '../../commands/labels/handlers.ts';
import { startRun, startToolCall, takeTurn } from '../../commands/tasks/runs.ts';
import { DueWakeups } from '../../processes/due-work.ts';
import { DEFAULT_TASK_RUNNER_OPTIONS, TaskRunner } from '../../processes/tasks/runner.ts';
import { taskToolReads } from '../../system.ts';
import { startAiServer } from '../support/ai-server.ts';
import { startTestApp } from '../support/app.ts';
import { eventually } from '../support/receiver.ts';
import { fileFromAnn } from '../support/tasks.ts';

/**
 * A runner taking up runs a dead process left midway, over NATS: the service here queues runs and
 * works none (its runner is not started); the steps the dead process took are appended as it
 * appended them; then a runner of this test starts.
 */
t.test('a cut write fails its run, an unfinished read is made again, an unanswered approval times out', async (t) => {
  const ai = await startAiServer(t);
  const tag = crypto.randomBytes(4).toString('hex');
  const queue = `task-runs-${tag}`;
  const h = await startTestApp(t, {
    natsUrl: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
    ai: { endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'assistant-1', timeoutMs: 1000 } },
    tasks: { scheduler: { queue: `task-schedule-${tag}` }, runner: { start: false, queue } },
  });
  const ws = await h.workspace();
  const operator = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
  await addDomain(
    h.system.commands,
    h.system.domains,
    operator,
    { domain: 'resume.example.com' },
    new Date().toISOString(),
  );
  const address = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'desk@resume.example.com' })).json();
  const { labelId } = await createLabel(
    h.system.commands,
    operator,
    { owner: address.id, address: address.address, name: 'Seen', color: null },
    new Date().toISOString(),
  );
  const mailbox = {
    addressId: address.id,
    address: address.address,
    domainId: address.domainId,
    domain: 'resume.example.com',
  };
  const { threadId } = await fileFromAnn(h, ws.workspaceId, mailbox, 'Refund please');
  const task = (
    await h.request(ws.apiKey, 'POST', '/tasks', {
      name: 'Resumed',
      instruction: 'Label new mail.',
      trigger: { kind: 'manual' },
    })
  ).json();
  const runNow = async () => (await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/runs`)).json().id as string;

  // What the dead process had done: run A was making a write, run B had asked for a read.
  const cut = await runNow();
  const left = await runNow();
  const label = { id: 'call_label', name: 'label_thread', arguments: JSON.stringify({ threadId, add: [labelId] }) };
  const read = { id: 'call_read', name: 'read_thread', arguments: JSON.stringify({ threadId }) };
  for (const [runId, call] of [
    [cut, label],
    [left, read],
  ] as const) {
    const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: runId };
    const ref = { runId, taskId: task.id };
    await startRun(h.system.commands, actor, ref);
    await takeTurn(h.system.commands, actor, ref, { afterStep: 0, actions: 1, content: null, toolCalls: [call] });
    if (call === label) await startToolCall(h.system.commands, actor, ref, call.id);
  }

  // A run queued, then its task deleted before any runner took it.
  const gone = (
    await h.request(ws.apiKey, 'POST', '/tasks', { name: 'Gone', instruction: 'x', trigger: { kind: 'manual' } })
  ).json();
  const orphan = (await h.request(ws.apiKey, 'POST', `/tasks/${gone.id}/runs`)).json().id;
  await h.request(ws.apiKey, 'DELETE', `/tasks/${gone.id}`);

  // A run queued two days ago (the service was down since): not started any more.
  const stale = await runNow();
  await eventually(async () => {
    const { rowCount } = await h.system.database.pool.query(
      "UPDATE task_run_work SET due_at = now() - interval '2 days' WHERE id = $1",
      [stale],
    );
    return rowCount === 1;
  });

  ai.reply = () => ({ content: 'Read the thread.' });
  const runner = new TaskRunner(
    {
      pool: h.system.database.pool,
      bus: h.system.bus,
      wakeups: new DueWakeups(),
      commands: h.system.commands,
      ai: h.system.ai,
      reads: taskToolReads(h.system.readDb, h.system.blobs),
      sending: h.system.sending,
    },
    { ...DEFAULT_TASK_RUNNER_OPTIONS, queue, pollMs: 20, approvalTimeoutMs: 1500 },
  );
  await runner.start();
  const ended = (runId: string) =>
    eventually(async () => {
      const run = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${runId}`)).json();
      return ['succeeded', 'failed'].includes(run.status) && run;
    });
  t.match(await ended(cut), {
    status: 'failed',
    error: { code: 'run_interrupted', message: /label_thread/ },
    steps: 1,
  });
  const thread = (await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json();
  t.notOk(thread.labels.includes(labelId), 'the write is not made again');

  t.match(await ended(left), { status: 'succeeded', summary: 'Read the thread.', steps: 3, aiActions: 2 });
  const steps = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${left}/steps`)).json().data;
  t.match(steps, [{ kind: 'model' }, { kind: 'tool', tool: 'read_thread', error: null }, { kind: 'model' }]);
  t.equal(ai.calls.length, 1, 'the model is asked once: for run B’s next turn, none for A nor the deleted task’s');
  const orphaned = await eventually(async () => {
    const { rows } = await h.system.database.pool.query('SELECT status, error FROM task_runs WHERE id = $1', [orphan]);
    return rows[0]?.status === 'failed' && rows[0];
  });
  t.match(orphaned.error, { code: 'task_deleted' }, 'a deleted task’s queued run is not started');
  t.match(
    await ended(stale),
    { status: 'failed', error: { code: 'run_expired' }, steps: 0, startedAt: null },
    'a run queued too long ago is not started',
  );
  const told = ai.calls[0]!.body.messages;
  t.match(told.at(-2), { role: 'assistant', tool_calls: [{ id: 'call_read' }] }, 'the turn the dead process recorded');
  t.match(told.at(-1), { role: 'tool', tool_call_id: 'call_read' });
  t.match(JSON.parse(told.at(-1)!.content), { id: threadId, subject: 'Refund please' });

  // A call waiting for an approval longer than the runner waits fails its run.
  const asking = (
    await h.request(ws.apiKey, 'POST', '/tasks', {
      name: 'Asking',
      instruction: 'File new mail.',
      trigger: { kind: 'manual' },
      autonomy: 'ask',
    })
  ).json();
  ai.reply = () => ({
    content: null,
    toolCalls: [{ name: 'file_thread', arguments: JSON.stringify({ threadId, label: 'archive' }) }],
  });
  const waited = (await h.request(ws.apiKey, 'POST', `/tasks/${asking.id}/runs`)).json().id;
  const [approval] = await eventually(async () => {
    const listed = (await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}/approvals?status=pending`)).json().data;
    return listed.length > 0 && listed;
  });
  t.match((await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}`)).json(), { pendingApprovals: 1 });
  const timedOut = await eventually(async () => {
    const run = (await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}/runs/${waited}`)).json();
    return run.status === 'failed' && run;
  });
  t.match(timedOut, { error: { code: 'approval_timed_out', message: /file_thread/ } });
  t.match((await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}`)).json(), { pendingApprovals: 0 });
  const late = await h.request(ws.apiKey, 'POST', `/tasks/${asking.id}/approvals/${approval.id}/approve`);
  t.equal(late.statusCode, 409);
  t.match(late.json().error, { code: 'task_run_finished' }, 'too late: the run has ended');
  t.match((await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}/approvals`)).json().data, [
    { id: approval.id, status: 'expired' },
  ]);
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels, ['inbox'], 'not filed');
  await runner.stop();
});
