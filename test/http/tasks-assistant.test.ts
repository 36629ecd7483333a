import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { createLabel } from '../../commands/labels/handlers.ts';
import { type ChatCall, type ChatReply, startAiServer } from '../support/ai-server.ts';
import { startTestApp } from '../support/app.ts';
import { eventually } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';
import { fileFromAnn } from '../support/tasks.ts';

/**
 * The assistant working runs: the model is the loopback server, scripted turn by turn; the tasks'
 * notices go to a loopback SMTP server.
 */
const ai = await startAiServer(t);
const smtp = await startSmtpServer(t);
const h = await startTestApp(t, {
  smtpUrl: smtp.url,
  ai: {
    endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'assistant-1', timeoutMs: 1000 },
    dailyActions: 1000,
  },
  tasks: { scheduler: { pollMs: 20 }, runner: { pollMs: 20 }, notices: { pollMs: 20 } },
});
const ws = await h.workspace();
await addDomain(
  h.system.commands,
  h.system.domains,
  { workspaceId: ws.workspaceId, kind: 'operator', id: null },
  { domain: 'assist.example.com' },
  new Date().toISOString(),
);
const address = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'help@assist.example.com' })).json();

const create = async (body: object) => {
  const res = await h.request(ws.apiKey, 'POST', '/tasks', {
    name: 'Assist',
    instruction: 'Label the new thread.',
    trigger: { kind: 'manual' },
    ...body,
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const runNow = async (taskId: string) => {
  const res = await h.request(ws.apiKey, 'POST', `/tasks/${taskId}/runs`);
  if (res.statusCode !== 202) throw new Error(res.body);
  return res.json();
};
/** A run ended, and its task told so (the runner marks its row done after that). */
const finished = (taskId: string, runId: string) =>
  eventually(async () => {
    const run = (await h.request(ws.apiKey, 'GET', `/tasks/${taskId}/runs/${runId}`)).json();
    const { rows } = await h.system.database.pool.query('SELECT done FROM task_run_work WHERE id = $1', [runId]);
    return ['succeeded', 'failed'].includes(run.status) && rows[0]?.done === true && run;
  });
const steps = async (taskId: string, runId: string) =>
  (await h.request(ws.apiKey, 'GET', `/tasks/${taskId}/runs/${runId}/steps?limit=100`)).json().data;

/** Replies in order, one per model call; past the script, a last word. */
function script(replies: ((call: ChatCall) => ChatReply)[]) {
  let i = 0;
  ai.reply = (call) => (replies[i++] ?? (() => ({ content: 'Nothing more to do.' })))(call);
}

const arrive = (subject: string, raw?: { sha256: string; size: number }) =>
  fileFromAnn(
    h,
    ws.workspaceId,
    {
      addressId: address.id,
      address: address.address,
      domainId: address.domainId,
      domain: 'assist.example.com',
    },
    subject,
    raw,
  );

t.test(
  'a run: turns and tool calls recorded as steps, a bad call told to the model, the thread labelled',
  async (t) => {
    // The label's mailbox needs no receiving domain here: its command, as the route would call it.
    const label = {
      id: (
        await createLabel(
          h.system.commands,
          { workspaceId: ws.workspaceId, kind: 'operator', id: null },
          { owner: address.id, address: address.address, name: 'Orders', color: null },
          new Date().toISOString(),
        )
      ).labelId,
    };
    const { sha256, size } = await h.system.blobs.put(
      Buffer.from(
        'From: Ann <ann@outside.test>\r\nTo: help@assist.example.com\r\nSubject: Order 17\r\n\r\n' +
          'Where is my order? It has not arrived.\r\n',
      ),
    );
    const { threadId } = await arrive('Order 17', { sha256, size });
    const task = await create({ toolkits: ['drafts', 'contacts'] });
    script([
      (call) => {
        t.same(
          call.body.tools?.map((x) => x.function.name).sort(),
          [
            'create_contact',
            'create_draft',
            'file_thread',
            'find_contacts',
            'label_thread',
            'list_labels',
            'list_threads',
            'read_contact',
            'read_thread',
            'update_contact',
          ],
          'the mail tools and those of the task’s toolkits',
        );
        t.match(call.body.messages[1]!.content, /Label the new thread\./);
        return { content: null, toolCalls: [{ name: 'read_thread', arguments: JSON.stringify({ threadId }) }] };
      },
      (call) => {
        const told = call.body.messages.at(-1)!;
        t.equal(told.role, 'tool');
        t.match(JSON.parse(told.content), {
          id: threadId,
          subject: 'Order 17',
          messages: [{ snippet: 'Where is my order?', text: /It has not arrived\./ }],
        });
        return {
          content: 'Labelling it.',
          toolCalls: [
            { name: 'label_thread', arguments: JSON.stringify({ threadId, add: [label.id] }) },
            { name: 'create_draft', arguments: '{"from": 42}' },
            { name: 'send_everything', arguments: '{}' },
          ],
        };
      },
      (call) => {
        const told = call.body.messages.slice(-3).map((m) => JSON.parse(m.content));
        t.match(told[0], { threadId, labels: ['inbox', label.id] });
        t.match(told[1], { error: { code: 'invalid_arguments', message: /from/ } });
        t.match(told[2], { error: { code: 'unknown_tool' } });
        return { content: 'Labelled the thread as Orders.' };
      },
    ]);
    const queued = await runNow(task.id);
    const run = await finished(task.id, queued.id);
    t.match(run, {
      status: 'succeeded',
      summary: 'Labelled the thread as Orders.',
      error: null,
      steps: 7,
      aiActions: 3,
      startedAt: String,
      finishedAt: String,
    });
    const listed = await steps(task.id, queued.id);
    t.same(
      listed.map((s: { kind: string; tool: string | null }) => s.tool ?? s.kind),
      ['model', 'read_thread', 'model', 'label_thread', 'create_draft', 'send_everything', 'model'],
    );
    t.same(
      listed.map((s: { step: number }) => s.step),
      [1, 2, 3, 4, 5, 6, 7],
    );
    t.match(listed[4], { kind: 'tool', result: null, error: { code: 'invalid_arguments' } });
    const thread = (await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json();
    t.ok(thread.labels.includes(label.id), 'the label is on the thread');
    t.equal((await h.request(ws.apiKey, 'GET', `/tasks/${task.id}`)).json().lastRunStatus, 'succeeded');
    const page = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${queued.id}/steps?limit=3`)).json();
    t.equal(page.data.length, 3);
    const next = (
      await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${queued.id}/steps?limit=10&cursor=${page.nextCursor}`)
    ).json();
    t.same(
      next.data.map((s: { step: number }) => s.step),
      [4, 5, 6, 7],
    );
    const other = await create({ name: 'Other' });
    t.equal(
      (await h.request(ws.apiKey, 'GET', `/tasks/${other.id}/runs/${queued.id}`)).json().error.code,
      'task_run_not_found',
      'a run of another task is not found',
    );
  },
);

const task = async (id: string) => (await h.request(ws.apiKey, 'GET', `/tasks/${id}`)).json();
const refusing: ChatReply = { status: 503, error: { message: 'overloaded', type: 'server_error' } };

t.test('maxSteps counts turns: a model still calling tools at the last one fails the run', async (t) => {
  const made = await create({ name: 'Looping', maxSteps: 2, model: 'advanced' });
  ai.reply = () => ({ content: null, toolCalls: [{ name: 'list_threads', arguments: '{}' }] });
  const run = await finished(made.id, (await runNow(made.id)).id);
  t.match(run, { status: 'failed', error: { code: 'max_steps_reached' }, steps: 3, aiActions: 20 });
  t.same(
    (await steps(made.id, run.id)).map((s: { kind: string }) => s.kind),
    ['model', 'tool', 'model'],
    'the calls of the last turn are not made',
  );
});

t.test('the model timing out or answering 5xx fails the run; five failures in a row pause the task', async (t) => {
  const made = await create({ name: 'Failing' });
  const run = async () => finished(made.id, (await runNow(made.id)).id);
  ai.reply = () => ({ content: 'too late', delayMs: 1500 });
  t.match(await run(), { status: 'failed', error: { code: 'model_unavailable' }, aiActions: 0, steps: 0 });
  ai.reply = () => refusing;
  for (let i = 2; i <= 4; i++) t.match(await run(), { status: 'failed', error: { code: 'model_unavailable' } });
  t.match(await task(made.id), { status: 'active', lastRunStatus: 'failed' }, 'four in a row: still active');

  h.system.ai.dailyActions = 0;
  t.match(await run(), { status: 'failed', error: { code: 'ai_quota_exceeded' } }, 'the quota fails the run');
  h.system.ai.dailyActions = 1000;
  t.match(await task(made.id), { status: 'active' }, 'a failure of the workspace’s allowance is not counted');

  t.match(await run(), { status: 'failed' });
  t.match(
    await task(made.id),
    { status: 'paused', pausedReason: 'failures', lastRunStatus: 'failed', nextRunAt: null },
    'the fifth failure in a row pauses it',
  );

  await h.request(ws.apiKey, 'POST', `/tasks/${made.id}/resume`);
  t.match(await run(), { status: 'failed' });
  t.match(await task(made.id), { status: 'active' }, 'resumed: the count starts again');
  ai.reply = () => ({ content: 'Done.' });
  t.match(await run(), { status: 'succeeded', summary: 'Done.' });
  ai.reply = () => refusing;
  for (let i = 1; i <= 4; i++) await run();
  t.match(await task(made.id), { status: 'active' }, 'a success breaks the row');
});

t.test('a revoked creator fails the run before any tool call', async (t) => {
  const scopes = ['tasks:write', 'threads:read', 'threads:write', 'emails:read', 'emails:send', 'labels:write'];
  const key = (await h.request(ws.apiKey, 'POST', '/keys', { name: 'Creator', scopes })).json();
  const made = await h.request(key.token, 'POST', '/tasks', {
    name: 'Orphan',
    instruction: 'Look around.',
    trigger: { kind: 'manual' },
    toolkits: [],
  });
  t.equal(made.statusCode, 201, made.body);
  t.equal((await h.request(ws.apiKey, 'DELETE', `/keys/${key.id}`)).statusCode, 200);
  ai.reply = () => ({ content: null, toolCalls: [{ name: 'list_threads', arguments: '{}' }] });
  const run = await finished(made.json().id, (await runNow(made.json().id)).id);
  t.match(run, { status: 'failed', error: { code: 'owner_unavailable' }, steps: 1 });
});

t.test('autonomy ask: each write waits for an approval; approved it is made, denied the model is told', async (t) => {
  const made = await h.request(ws.apiKey, 'POST', '/labels', { address: address.address, name: 'x' });
  t.equal(made.statusCode, 422, 'labels of this mailbox are made by command here (see the first test)');
  const label = (
    await createLabel(
      h.system.commands,
      { workspaceId: ws.workspaceId, kind: 'operator', id: null },
      { owner: address.id, address: address.address, name: 'Asked', color: null },
      new Date().toISOString(),
    )
  ).labelId;
  const { threadId } = await arrive('Invoice 9');
  const asking = await create({ name: 'Asking', autonomy: 'ask', toolkits: ['drafts'] });
  const draft = { from: address.address, to: ['ann@outside.test'], subject: 'Re: Invoice 9', text: 'Thanks!' };
  script([
    () => ({
      content: null,
      toolCalls: [
        { name: 'read_thread', arguments: JSON.stringify({ threadId }) },
        { name: 'label_thread', arguments: JSON.stringify({ threadId, add: [label] }) },
        { name: 'create_draft', arguments: JSON.stringify(draft) },
      ],
    }),
    (call) => {
      const told = call.body.messages.slice(-3).map((m) => JSON.parse(m.content));
      t.match(told[0], { id: threadId }, 'a read is made alone');
      t.match(told[1], { labels: ['inbox', label] }, 'the approved write was made');
      t.match(told[2], { error: { code: 'approval_denied' } }, 'the denied one was not');
      return { content: 'Labelled; the draft was not wanted.' };
    },
  ]);
  const run = await runNow(asking.id);
  const approvals = (status = 'pending') =>
    h.request(ws.apiKey, 'GET', `/tasks/${asking.id}/approvals?status=${status}`).then((r) => r.json().data);
  const waiting = async () =>
    eventually(async () => {
      const [pending] = await approvals();
      const read = (await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}/runs/${run.id}`)).json();
      return pending && read.status === 'waiting' && pending;
    });
  const first = await waiting();
  t.match(first, { object: 'task_approval', id: /^tap_/, runId: run.id, tool: 'label_thread', status: 'pending' });
  t.match(await task(asking.id), { pendingApprovals: 1, lastRunStatus: 'waiting' });
  t.notOk((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels.includes(label), 'not yet made');

  const approve = (id: string) => h.request(ws.apiKey, 'POST', `/tasks/${asking.id}/approvals/${id}/approve`);
  const approved = await approve(first.id);
  t.equal(approved.statusCode, 200, approved.body);
  t.match(approved.json(), { status: 'approved', decidedAt: String });
  t.match((await approve(first.id)).json().error, { code: 'task_approval_decided' }, 'decided once');
  t.equal((await approve(first.id)).statusCode, 409);

  const second = await waiting();
  t.match(second, { tool: 'create_draft', arguments: JSON.stringify(draft) });
  t.ok((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels.includes(label), 'approved: made');
  const denied = await h.request(ws.apiKey, 'POST', `/tasks/${asking.id}/approvals/${second.id}/deny`);
  t.match(denied.json(), { status: 'denied' });
  t.match(await finished(asking.id, run.id), { status: 'succeeded', summary: 'Labelled; the draft was not wanted.' });
  t.equal((await h.request(ws.apiKey, 'GET', '/drafts')).json().data.length, 0, 'no draft was made');
  t.match(await task(asking.id), { pendingApprovals: 0, lastRunStatus: 'succeeded' });
  t.same(
    (await approvals('denied')).map((a: { id: string }) => a.id),
    [second.id],
  );
  const listed = (await h.request(ws.apiKey, 'GET', `/tasks/${asking.id}/approvals`)).json().data;
  t.same(
    listed.map((a: { id: string }) => a.id),
    [second.id, first.id],
    'newest first',
  );

  const other = await create({ name: 'Not asking' });
  const foreign = await h.request(ws.apiKey, 'POST', `/tasks/${other.id}/approvals/${first.id}/approve`);
  t.match(foreign.json().error, { code: 'task_approval_not_found', param: 'approvalId' });
  t.equal(foreign.statusCode, 404);
});

t.test('autonomy organize: labels and files alone', async (t) => {
  const { threadId } = await arrive('Newsletter');
  const organizing = await create({ name: 'Organizing', autonomy: 'organize', toolkits: [] });
  script([
    () => ({
      content: null,
      toolCalls: [{ name: 'file_thread', arguments: JSON.stringify({ threadId, label: 'archive' }) }],
    }),
    () => ({ content: 'Archived.' }),
  ]);
  t.match(await finished(organizing.id, (await runNow(organizing.id)).id), { status: 'succeeded', steps: 3 });
  t.match((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json(), { labels: ['archive'] });
});

t.test('a mail-triggered run is told the arriving message and its thread, and files it', async (t) => {
  const triage = await create({
    name: 'Triage',
    instruction: 'Archive newsletters.',
    trigger: { kind: 'mail', subjectContains: 'weekly digest' },
    toolkits: [],
  });
  let brief = '';
  ai.reply = (call) => {
    if (call.body.messages.length > 2) return { content: 'Archived the digest.' };
    brief = call.body.messages[1]!.content;
    const threadId = /thread (thr_[0-9a-f]+)/.exec(brief)?.[1] ?? 'thr_none';
    return {
      content: null,
      toolCalls: [{ name: 'file_thread', arguments: JSON.stringify({ threadId, label: 'archive' }) }],
    };
  };
  const { threadId, messageId } = await arrive('Your Weekly Digest');
  const [run] = await eventually(async () => {
    const listed = (await h.request(ws.apiKey, 'GET', `/tasks/${triage.id}/runs`)).json().data;
    return listed.length > 0 && listed;
  });
  t.match(run, { source: 'mail', messageId });
  t.match(await finished(triage.id, run.id), { status: 'succeeded', summary: 'Archived the digest.' });
  t.match(brief, new RegExp(`message ${messageId} arriving in thread ${threadId}`));
  t.match(brief, /Archive newsletters\./);
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels, ['archive']);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${triage.id}`);
});

t.test(
  'notify: attention mails the owner on failures and waiting calls, always also on success, never nothing',
  async (t) => {
    const { rows } = await h.system.database.pool.query(
      'SELECT email FROM memberships WHERE workspace_id = $1 AND is_owner',
      [ws.workspaceId],
    );
    const owner = rows[0].email as string;
    const mailed = (pattern: RegExp) => smtp.mails.filter((m) => m.to.includes(owner) && pattern.test(m.subject));
    await eventually(async () => mailed(/failed/).length > 0 && mailed(/waits for your approval/).length > 0);
    t.match(mailed(/waits for your approval/)[0], { subject: /“Asking”/, text: /label_thread .*\/approvals/s });
    t.match(mailed(/failed/)[0], { text: /model_unavailable|max_steps_reached/ });
    t.equal(mailed(/succeeded/).length, 0, 'attention: a success is not mailed');

    const never = await create({ name: 'Quiet', notify: 'never' });
    ai.reply = () => refusing;
    const quiet = await finished(never.id, (await runNow(never.id)).id);
    const always = await create({ name: 'Chatty', notify: 'always' });
    ai.reply = () => ({ content: 'All tidy.' });
    const chatty = await finished(always.id, (await runNow(always.id)).id);
    const [success] = await eventually(async () => {
      const found = mailed(/succeeded/);
      return found.length > 0 && found;
    });
    t.match(success, { subject: /“Chatty” succeeded/, text: /All tidy\./ });
    t.ok(success?.text.includes(`/runs/${chatty.id}`), 'the mail names the run');
    const owed = await h.system.database.pool.query(
      'SELECT count(*)::int AS n FROM task_notice_mails WHERE run_id = $1',
      [quiet.id],
    );
    t.equal(owed.rows[0].n, 0, 'never: nothing owed for its failure');
  },
);

t.test('a task deleted while a call of its run waits: the run ends, the call not made', async (t) => {
  const { threadId } = await arrive('Spam?');
  const asking = await create({ name: 'Deleted while asking', autonomy: 'ask', toolkits: [] });
  ai.reply = () => ({
    content: null,
    toolCalls: [{ name: 'file_thread', arguments: JSON.stringify({ threadId, label: 'trash' }) }],
  });
  const run = await runNow(asking.id);
  await eventually(async () => (await task(asking.id)).pendingApprovals === 1);
  await h.request(ws.apiKey, 'DELETE', `/tasks/${asking.id}`);
  const row = await eventually(async () => {
    const { rows } = await h.system.database.pool.query(
      'SELECT r.status, r.error, a.status AS approval FROM task_runs r JOIN task_approvals a ON a.run_id = r.id WHERE r.id = $1',
      [run.id],
    );
    return rows[0]?.status === 'failed' && rows[0];
  });
  t.match(row, { error: { code: 'task_deleted' }, approval: 'expired' });
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels, ['inbox'], 'not trashed');
});
