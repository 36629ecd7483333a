import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { type ChatCall, type ChatReply, startAiServer } from '../support/ai-server.ts';
import { startTestApp } from '../support/app.ts';
import { errorOf, keyWith } from '../support/domains.ts';
import { walkPages } from '../support/paging.ts';
import { eventually } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';
import { fileFromAnn } from '../support/tasks.ts';

/**
 * One-off jobs through the api, worked by the assistant against the loopback model server
 * (scripted turn by turn); their notices go to a loopback SMTP server. The plan allows 4 jobs a
 * day per workspace here.
 */
const JOBS_PER_DAY = 4;
const ai = await startAiServer(t);
const smtp = await startSmtpServer(t);
const h = await startTestApp(t, {
  smtpUrl: smtp.url,
  ai: {
    endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'assistant-1', timeoutMs: 1000 },
    dailyActions: 1000,
  },
  tasks: { limits: { jobsPerDay: JOBS_PER_DAY }, runner: { pollMs: 20 }, notices: { pollMs: 20 } },
});
const ws = await h.workspace();
const foreign = await h.workspace();
await addDomain(
  h.system.commands,
  h.system.domains,
  { workspaceId: ws.workspaceId, kind: 'operator', id: null },
  { domain: 'jobs.example.com' },
  new Date().toISOString(),
);
const address = (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'desk@jobs.example.com' })).json();
const arrive = (subject: string) =>
  fileFromAnn(
    h,
    ws.workspaceId,
    { addressId: address.id, address: address.address, domainId: address.domainId, domain: 'jobs.example.com' },
    subject,
  );

const start = (body: object, key = ws.apiKey) =>
  h.request(key, 'POST', '/task-jobs', { instruction: 'Tidy the inbox.', ...body });
const started = async (body: object, key = ws.apiKey) => {
  const res = await start(body, key);
  if (res.statusCode !== 202) throw new Error(res.body);
  return res.json();
};
/** A job ended (the runner marks its row done after the end is recorded). */
const finished = (id: string, key = ws.apiKey) =>
  eventually(async () => {
    const job = (await h.request(key, 'GET', `/task-jobs/${id}`)).json();
    const { rows } = await h.system.database.pool.query('SELECT done FROM task_run_work WHERE id = $1', [id]);
    return ['succeeded', 'failed'].includes(job.status) && rows[0]?.done === true && job;
  });
const lastWord: ChatReply = { content: 'Nothing to do.' };

/** Replies in order, one per model call; past the script, a last word. */
function script(replies: ((call: ChatCall) => ChatReply)[]) {
  let i = 0;
  ai.reply = (call) => (replies[i++] ?? (() => lastWord))(call);
}

t.test('a job: a tool call made, the run succeeded, its steps listed; notify mails the creator', async (t) => {
  const { threadId } = await arrive('Weekly digest');
  let brief = '';
  script([
    (call) => {
      brief = call.body.messages[1]!.content;
      t.same(
        call.body.tools?.map((x) => x.function.name).sort(),
        ['file_thread', 'label_thread', 'list_labels', 'list_threads', 'read_thread'],
        'the mail tools only: no toolkit named',
      );
      return {
        content: null,
        toolCalls: [{ name: 'file_thread', arguments: JSON.stringify({ threadId, label: 'archive' }) }],
      };
    },
    () => ({ content: 'Archived the digest.' }),
  ]);
  const res = await start({ instruction: 'Archive the weekly digest.', toolkits: [], notify: 'always', maxSteps: 3 });
  t.equal(res.statusCode, 202, res.body);
  const job = res.json();
  t.match(job, {
    object: 'task_run',
    id: /^trn_[0-9a-f]{24}$/,
    taskId: null,
    source: 'job',
    status: 'queued',
    scheduledFor: null,
    messageId: null,
    model: 'standard',
  });
  const done = await finished(job.id);
  t.match(done, { status: 'succeeded', summary: 'Archived the digest.', steps: 3, aiActions: 2, error: null });
  t.match(brief, /one-off job/);
  t.match(brief, /Archive the weekly digest\./);
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels, ['archive'], 'the call was made');
  const steps = (await h.request(ws.apiKey, 'GET', `/task-jobs/${job.id}/steps?limit=2`)).json();
  t.same(
    steps.data.map((s: { tool: string | null; kind: string }) => s.tool ?? s.kind),
    ['model', 'file_thread'],
  );
  const rest = (
    await h.request(ws.apiKey, 'GET', `/task-jobs/${job.id}/steps?limit=2&cursor=${steps.nextCursor}`)
  ).json();
  t.same(
    rest.data.map((s: { step: number }) => s.step),
    [3],
  );
  t.equal(rest.hasMore, false);

  const { rows } = await h.system.database.pool.query(
    'SELECT email FROM memberships WHERE workspace_id = $1 AND is_owner',
    [ws.workspaceId],
  );
  const [mail] = await eventually(async () => {
    const found = smtp.mails.filter((m) => m.to.includes(rows[0].email) && /one-off job succeeded/.test(m.subject));
    return found.length > 0 && found;
  });
  t.match(mail, { text: /Archived the digest\./ });
  t.ok(mail?.text.includes(`/task-jobs/${job.id}`), 'the mail names the job’s path');
  t.equal((await h.request(ws.apiKey, 'GET', '/tasks')).json().data.length, 0, 'no task was saved');
});

t.test('a job under autonomy ask: its write waits for an approval on the job’s path', async (t) => {
  const { threadId } = await arrive('Spam?');
  // Two jobs at once: the one asking trashes the thread, the other only answers.
  ai.reply = (call) => {
    if (!/Trash the spam\./.test(call.body.messages[1]!.content)) return lastWord;
    if (call.body.messages.length === 2)
      return {
        content: null,
        toolCalls: [{ name: 'file_thread', arguments: JSON.stringify({ threadId, label: 'trash' }) }],
      };
    t.match(JSON.parse(call.body.messages.at(-1)!.content), { labels: ['trash'] }, 'made once approved');
    return { content: 'Trashed.' };
  };
  const job = await started({ instruction: 'Trash the spam.', autonomy: 'ask', toolkits: [] });
  const [pending] = await eventually(async () => {
    const listed = (await h.request(ws.apiKey, 'GET', `/task-jobs/${job.id}/approvals?status=pending`)).json().data;
    const read = (await h.request(ws.apiKey, 'GET', `/task-jobs/${job.id}`)).json();
    return listed.length > 0 && read.status === 'waiting' && listed;
  });
  t.match(pending, { object: 'task_approval', taskId: null, runId: job.id, tool: 'file_thread', status: 'pending' });
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels, ['inbox'], 'not yet made');
  t.same(errorOf(await h.request(foreign.apiKey, 'POST', `/task-jobs/${job.id}/approvals/${pending.id}/approve`)), [
    404,
    'task_run_not_found',
    'id',
  ]);
  const other = await started({ toolkits: [] });
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', `/task-jobs/${other.id}/approvals/${pending.id}/approve`)),
    [404, 'task_approval_not_found', 'approvalId'],
    'an approval of another job',
  );
  const approved = await h.request(ws.apiKey, 'POST', `/task-jobs/${job.id}/approvals/${pending.id}/approve`);
  t.equal(approved.statusCode, 200, approved.body);
  t.match(approved.json(), { status: 'approved', decidedAt: String });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/task-jobs/${job.id}/approvals/${pending.id}/deny`)), [
    409,
    'task_approval_decided',
    null,
  ]);
  t.match(await finished(job.id), { status: 'succeeded', summary: 'Trashed.' });
  const asked = await eventually(async () =>
    smtp.mails.find((m) => /one-off job waits for your approval/.test(m.subject) && m.text.includes(job.id)),
  );
  t.ok(asked?.text.includes(`/task-jobs/${job.id}/approvals`), 'the notice links to the job’s approvals');
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${threadId}`)).json().labels, ['trash']);
  await finished(other.id);
});

t.test('the daily limit of one-off jobs: at the edge, one past, and under concurrency', async (t) => {
  const busy = await h.workspace();
  ai.reply = () => lastWord;
  for (let i = 0; i < JOBS_PER_DAY - 1; i++) await started({ toolkits: [] }, busy.apiKey);
  const answers = await Promise.all(Array.from({ length: 5 }, () => start({ toolkits: [] }, busy.apiKey)));
  t.same(
    answers.map((r) => r.statusCode).sort(),
    [202, 409, 409, 409, 409],
    'the last of the day goes to one of five at once',
  );
  t.same(errorOf(answers.find((r) => r.statusCode === 409)!), [409, 'task_run_limit_reached', null]);
  t.same(errorOf(await start({ toolkits: [] }, busy.apiKey)), [409, 'task_run_limit_reached', null], 'one past');
  const listed = (await h.request(busy.apiKey, 'GET', '/task-jobs?limit=100')).json().data;
  t.equal(listed.length, JOBS_PER_DAY, 'only the jobs within the limit were queued');
  t.equal((await start({ toolkits: [] }, foreign.apiKey)).statusCode, 202, 'the limit is each workspace’s');
  for (const job of listed) await finished(job.id, busy.apiKey);
});

t.test('jobs listed newest first across pages, one started between pages', async (t) => {
  const paged = await h.workspace();
  ai.reply = () => lastWord;
  const made: string[] = [];
  for (let i = 0; i < JOBS_PER_DAY - 1; i++) made.push((await started({ toolkits: [] }, paged.apiKey)).id);
  let added = '';
  const { seen, pages } = await walkPages(h, paged.apiKey, '/task-jobs?limit=2', async () => {
    added = (await started({ toolkits: [] }, paged.apiKey)).id;
  });
  t.equal(pages, 2);
  t.same(seen, made.reverse(), 'the job started after the first page is before the cursor: not in this walk');
  t.equal((await h.request(paged.apiKey, 'GET', '/task-jobs')).json().data[0].id, added);
  for (const id of [...made, added]) await finished(id, paged.apiKey);
});

t.test('bad bodies name their param; toolkits need their scopes', async (t) => {
  const refused: [object, string, string][] = [
    [{ instruction: undefined }, 'invalid_parameter', 'instruction'],
    [{ instruction: '   ' }, 'invalid_parameter', 'instruction'],
    [{ instruction: 'x'.repeat(8001) }, 'invalid_parameter', 'instruction'],
    [{ maxSteps: 0 }, 'invalid_parameter', 'maxSteps'],
    [{ maxSteps: 61 }, 'invalid_parameter', 'maxSteps'],
    [{ toolkits: ['drafts', 'email'] }, 'invalid_parameter', 'toolkits.1'],
    [{ toolkits: ['drafts', 'drafts'] }, 'invalid_parameter', 'toolkits'],
    [{ autonomy: 'all' }, 'invalid_parameter', 'autonomy'],
    [{ model: 'huge' }, 'invalid_parameter', 'model'],
    [{ notify: 'sometimes' }, 'invalid_parameter', 'notify'],
    [{ name: 'A task?' }, 'unknown_parameter', 'name'],
    [{ trigger: { kind: 'manual' } }, 'unknown_parameter', 'trigger'],
  ];
  for (const [body, code, param] of refused) t.same(errorOf(await start(body)), [422, code, param], param);
  const writer = await keyWith(h, ws.apiKey, {
    name: 'job writer',
    scopes: ['tasks:write', 'threads:read', 'threads:write', 'emails:read', 'emails:send', 'labels:write'],
  });
  t.same(errorOf(await start({ toolkits: ['contacts'] }, writer)), [403, 'insufficient_scope', 'toolkits']);
  t.same(errorOf(await start({}, writer)), [403, 'insufficient_scope', 'toolkits'], 'the default toolkits too');
  const reader = await keyWith(h, ws.apiKey, { name: 'job reader', scopes: ['tasks:read', 'threads:read'] });
  t.same(errorOf(await start({ toolkits: [] }, reader)), [403, 'insufficient_scope', null]);
});

t.test('a job is its workspace’s: a foreign or unknown id, or a task’s run, is 404', async (t) => {
  ai.reply = () => lastWord;
  const job = await started({ toolkits: [] });
  for (const path of ['', '/steps', '/approvals'])
    t.same(
      errorOf(await h.request(foreign.apiKey, 'GET', `/task-jobs/${job.id}${path}`)),
      [404, 'task_run_not_found', 'id'],
      `GET ${path || '/'}`,
    );
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/task-jobs/trn_000000000000000000000000')), [
    404,
    'task_run_not_found',
    'id',
  ]);
  t.notOk(
    (await h.request(foreign.apiKey, 'GET', '/task-jobs?limit=100'))
      .json()
      .data.some((x: { id: string }) => x.id === job.id),
    'not in another workspace’s list',
  );
  const task = (
    await h.request(ws.apiKey, 'POST', '/tasks', { name: 'Saved', instruction: 'x', trigger: { kind: 'manual' } })
  ).json();
  const run = (await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/runs`)).json();
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/task-jobs/${run.id}`)), [404, 'task_run_not_found', 'id']);
  t.notOk(
    (await h.request(ws.apiKey, 'GET', '/task-jobs?limit=100'))
      .json()
      .data.some((x: { id: string }) => x.id === run.id),
    'a task’s run is not a job',
  );
  await finished(job.id);
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${run.id}`)).json().finishedAt,
  );
  await h.request(ws.apiKey, 'DELETE', `/tasks/${task.id}`);
});
