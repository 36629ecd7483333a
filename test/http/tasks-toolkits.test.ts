import t from 'tap';
import { startAiServer } from '../support/ai-server.ts';
import { startSendingApp } from '../support/emails.ts';
import { eventually } from '../support/receiver.ts';

/** The `sent` toolkit: a task's run sends a draft through the sending pipeline, as its autonomy allows. */
const ai = await startAiServer(t);
const { h, setUp } = await startSendingApp(t, {
  ai: { endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'assistant-1', timeoutMs: 1000 } },
  tasks: { runner: { pollMs: 20 } },
});
const { ws, a } = await setUp('tasks-send.example.com');

const create = async (autonomy: string) => {
  const res = await h.request(ws.apiKey, 'POST', '/tasks', {
    name: `Replying (${autonomy})`,
    instruction: 'Answer Ann.',
    trigger: { kind: 'manual' },
    autonomy,
    toolkits: ['drafts', 'sent'],
  });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const run = async (taskId: string) => (await h.request(ws.apiKey, 'POST', `/tasks/${taskId}/runs`)).json().id;
const status = (taskId: string, runId: string) =>
  h.request(ws.apiKey, 'GET', `/tasks/${taskId}/runs/${runId}`).then((r) => r.json());

/** Drafts a reply, sends it, then ends. */
function replying(subject: string) {
  ai.reply = (call) => {
    const last = call.body.messages.at(-1)!;
    if (last.role === 'user') {
      const draft = { from: a.address, to: ['ann@example.org'], subject, text: 'Thank you, Ann.' };
      return { content: null, toolCalls: [{ name: 'create_draft', arguments: JSON.stringify(draft) }] };
    }
    const told = JSON.parse(last.content);
    if (told.draftId) return { content: null, toolCalls: [{ name: 'send_draft', arguments: JSON.stringify(told) }] };
    return { content: `Sent: ${last.content}` };
  };
}

t.test('reply: the run sends alone; the email is the task’s', async (t) => {
  const task = await create('reply');
  replying('Re: your order');
  const runId = await run(task.id);
  const done = await eventually(async () => {
    const read = await status(task.id, runId);
    return ['succeeded', 'failed'].includes(read.status) && read;
  });
  t.match(done, { status: 'succeeded', summary: /emailId/ });
  const emailId = JSON.parse(done.summary.slice('Sent: '.length)).emailId;
  const email = (await h.request(ws.apiKey, 'GET', `/emails/${emailId}`)).json();
  t.match(email, { id: emailId, source: 'task', subject: 'Re: your order' });
  t.match(JSON.stringify(email.recipients), /ann@example\.org/);
  t.equal((await h.request(ws.apiKey, 'GET', '/drafts')).json().data.length, 0, 'the draft is sent, no longer a draft');
});

t.test('organize: the draft is made alone, the send waits for an approval', async (t) => {
  const task = await create('organize');
  replying('Re: your invoice');
  const runId = await run(task.id);
  const [approval] = await eventually(async () => {
    const listed = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/approvals`)).json().data;
    return listed.length > 0 && listed;
  });
  t.match(approval, { tool: 'send_draft', status: 'pending' });
  t.equal((await h.request(ws.apiKey, 'GET', '/drafts')).json().data.length, 1, 'drafted alone');
  await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/approvals/${approval.id}/approve`);
  const done = await eventually(async () => {
    const read = await status(task.id, runId);
    return read.status === 'succeeded' && read;
  });
  const emailId = JSON.parse(done.summary.slice('Sent: '.length)).emailId;
  t.match((await h.request(ws.apiKey, 'GET', `/emails/${emailId}`)).json(), {
    source: 'task',
    subject: 'Re: your invoice',
  });
});
