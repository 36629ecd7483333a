import t from 'tap';
import { TOOLKIT_SCOPES } from '../../api/routes/tasks/views.ts';
import { CALLS_PER_TURN } from '../../processes/tasks/runner.ts';
import type { Toolkit } from '../../domain/tasks/events.ts';
import { startAiServer } from '../support/ai-server.ts';
import { audienceWith, broadcastTemplate } from '../support/broadcasts.ts';
import { startSendingApp } from '../support/emails.ts';
import { eventually } from '../support/receiver.ts';
import { fileFromAnn } from '../support/tasks.ts';

/**
 * The toolkits past mail: a task's run sends a draft through the sending pipeline, as its autonomy
 * allows; reads sent mail and its events, contacts and their notes, audiences, templates, a
 * thread's files, an address's subscription and who unsubscribed, and the aggregates of insights
 * (template analytics, sending lanes, broadcasts, audience growth, each as its endpoint answers
 * and under that endpoint's scope), and writes contacts, notes, audience membership
 * and unsubscribes; a turn makes at most `CALLS_PER_TURN` calls. The model is the loopback
 * server, scripted; the tools are ours, made for real.
 */
const ai = await startAiServer(t);
const { h, setUp } = await startSendingApp(t, {
  ai: { endpoint: { baseUrl: ai.baseUrl, apiKey: ai.apiKey, model: 'assistant-1', timeoutMs: 1000 } },
  tasks: { runner: { pollMs: 20 } },
});
const { ws, a } = await setUp('tasks-send.example.com');

const create = async (autonomy: string, toolkits = ['drafts', 'sent'], key = ws.apiKey) => {
  const res = await h.request(key, 'POST', '/tasks', {
    name: `Replying (${autonomy})`,
    instruction: 'Answer Ann.',
    trigger: { kind: 'manual' },
    autonomy,
    toolkits,
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

const NEW_TOOLKITS: Toolkit[] = [
  'contacts',
  'notes',
  'audiences',
  'templates',
  'files',
  'sent',
  'tracking',
  'subscriptions',
  'insights',
];
type Call = [name: string, args: object | string];
type Told = { error?: { code: string; message: string } } & Record<string, unknown>;

/**
 * A run whose turns make `calls` in order, `CALLS_PER_TURN` a turn (the most a turn makes), then
 * end; answers the run and what the model was told of each call.
 */
async function calling(taskId: string, calls: Call[]) {
  let told: Told[] = [];
  ai.reply = (call) => {
    const messages = call.body.messages;
    const turn = messages.filter((m) => m.role === 'assistant').length;
    const next = calls.slice(turn * CALLS_PER_TURN, (turn + 1) * CALLS_PER_TURN);
    if (next.length > 0)
      return {
        content: null,
        toolCalls: next.map(([name, args]) => ({
          name,
          arguments: typeof args === 'string' ? args : JSON.stringify(args),
        })),
      };
    told = messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
    return { content: 'Done.' };
  };
  const runId = await run(taskId);
  const done = await eventually(async () => {
    const read = await status(taskId, runId);
    return ['succeeded', 'failed'].includes(read.status) && read;
  });
  return { run: done, told };
}

/** A sent email delivered to the loopback MX. */
async function delivered(from: string, to: string) {
  const sent = await h.request(ws.apiKey, 'POST', '/emails', { from, to, subject: 'Your order', text: 'Shipped.' });
  if (sent.statusCode !== 201) throw new Error(sent.body);
  return eventually(async () => {
    const read = (await h.request(ws.apiKey, 'GET', `/emails/${sent.json().id}`)).json();
    return read.status === 'delivered' && read;
  });
}

/** An attachment of an arriving message, its bytes stored. */
async function attached(bytes: Buffer, filename: string, contentType: string) {
  const { sha256, size } = await h.system.blobs.put(bytes);
  return { filename, contentType, size, sha256, contentId: null, inline: false };
}

/** Where `address` (an address of the API) files arriving mail. */
const mailbox = (address: { id: string; address: string; domainId: string }) => ({
  addressId: address.id,
  address: address.address,
  domainId: address.domainId,
  domain: address.address.split('@')[1]!,
});

t.test('every new tool reads and writes the workspace’s own data, organize writing alone', async (t) => {
  const email = await delivered(a.address, 'ann@example.org');
  const audience = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'VIP' })).json();
  const template = await h.request(ws.apiKey, 'POST', '/templates', {
    name: 'Order Shipped',
    subject: 'Shipped, {{name}}',
    document: { body: [{ kind: 'Text', text: 'Hi {{name}}, it is on its way.' }] },
    props: [{ name: 'name', type: 'string', default: 'there' }],
    publish: true,
  });
  t.equal(template.statusCode, 201, template.body);
  const { threadId } = await fileFromAnn(h, ws.workspaceId, mailbox(a), 'Delivery', undefined, [
    await attached(Buffer.from('Deliver to the back door.\n'), 'note.txt', 'text/plain'),
    await attached(Buffer.from('%PDF-1.4 not text'), 'label.pdf', 'application/pdf'),
  ]);
  const files = (await h.request(ws.apiKey, 'GET', `/files?threadId=${threadId}`)).json().data;
  const byName = (name: string) => files.find((f: { filename: string }) => f.filename === name).id;

  const task = await create('organize', NEW_TOOLKITS);
  const bob = 'bob@example.net';
  const { run, told } = await calling(task.id, [
    ['create_contact', { email: ' Bob@Example.net ', name: 'Bob', attributes: { plan: 'pro' } }],
    ['update_contact', { email: bob, name: 'Bob Stone', attributes: { plan: null, tier: 'gold' } }],
    ['set_notes', { email: bob, notes: 'Prefers mornings.' }],
    ['read_notes', { email: bob }],
    ['list_audiences', {}],
    ['add_to_audience', { audienceId: audience.id, email: bob }],
    ['list_audience_contacts', { audienceId: audience.id }],
    ['list_templates', { search: 'shipped' }],
    ['read_template', { template: 'order-shipped' }],
    ['list_attachments', { threadId }],
    ['read_file', { fileId: byName('note.txt') }],
    ['read_file', { fileId: byName('label.pdf') }],
    ['list_sent_emails', { from: a.address }],
    ['read_sent_email', { emailId: email.id }],
    ['list_email_events', { emailId: email.id }],
    ['create_contact', { email: bob }],
  ]);
  t.match(run, { status: 'succeeded', steps: 19 }, 'two turns of calls, and the last word');
  t.match(told[0], { email: bob, name: 'Bob', attributes: { plan: 'pro' }, notes: null });
  t.match(told[1], { email: bob, name: 'Bob Stone', attributes: { tier: 'gold' } });
  t.notOk('plan' in (told[1]!.attributes as object), 'a null attribute is removed');
  t.same(told[2], { email: bob, notes: 'Prefers mornings.' });
  t.same(told[3], { email: bob, notes: 'Prefers mornings.' });
  t.match(told[4], { audiences: [{ builtin: 'default' }, { id: audience.id, name: 'VIP' }] });
  t.same(told[5], { audienceId: audience.id, email: bob, member: true });
  t.match(told[6], { contacts: [{ email: bob, name: 'Bob Stone' }] });
  t.match(told[7], { templates: [{ id: template.json().id, slug: 'order-shipped', status: 'active' }] });
  t.match(told[8], {
    id: template.json().id,
    publishedVersion: 1,
    subject: 'Shipped, {{name}}',
    published: { document: { body: [{ kind: 'Text', text: /it is on its way/ }] } },
  });
  t.equal((told[9]!.files as unknown[]).length, 2);
  t.match(told[10], { filename: 'note.txt', contentType: 'text/plain', text: 'Deliver to the back door.\n' });
  t.match(told[11], { filename: 'label.pdf', text: null });
  t.match(told[12], {
    emails: [{ id: email.id, status: 'delivered', recipients: [{ email: 'ann@example.org', status: 'delivered' }] }],
  });
  t.match(told[13], { id: email.id, status: 'delivered', recipients: [{ status: 'delivered', attempts: 1 }] });
  t.match(told[14], { events: [{ type: 'EmailAccepted' }] });
  t.ok(
    (told[14]!.events as { type: string }[]).some((e) => e.type === 'EmailRecipientDelivered'),
    'the delivery is among the events',
  );
  t.match(told[15], { error: { code: 'contact_exists' } }, 'a refusal of the command is told');
  const contact = (await h.request(ws.apiKey, 'GET', `/contacts/${bob}`)).json();
  t.match(contact, { name: 'Bob Stone', notes: 'Prefers mornings.', attributes: { tier: 'gold' } });
  t.ok(contact.audienceIds.includes(audience.id), 'in the audience');

  const insights = await create('organize', ['insights']);
  let offered: string[] = [];
  ai.reply = (call) => {
    offered = call.body.tools?.map((x) => x.function.name) ?? [];
    return { content: 'Nothing to do.' };
  };
  const runId = (await h.request(ws.apiKey, 'POST', `/tasks/${insights.id}/runs`)).json().id;
  await eventually(async () => (await status(insights.id, runId)).status === 'succeeded');
  t.same(
    offered.filter((n) => !['list_threads', 'read_thread', 'list_labels', 'label_thread', 'file_thread'].includes(n)),
    ['list_email_events', 'template_analytics', 'sending_overview', 'list_broadcasts', 'audience_growth'],
    'insights offers an email’s events and the aggregates',
  );
  t.notOk(offered.includes('read_sent_email'), 'and nothing of the other toolkits');
});

t.test('a long text file: its beginning, said to be cut', async (t) => {
  const { threadId } = await fileFromAnn(h, ws.workspaceId, mailbox(a), 'Long', undefined, [
    await attached(Buffer.from('é'.repeat(12_000)), 'long.csv', 'text/csv'),
  ]);
  const [file] = (await h.request(ws.apiKey, 'GET', `/files?threadId=${threadId}`)).json().data;
  const task = await create('organize', ['files']);
  const { told } = await calling(task.id, [['read_file', { fileId: file.id }]]);
  t.match(told[0], { textCut: true });
  t.equal(told[0]!.text, 'é'.repeat(10_000));
});

t.test('ask: the new writes wait for a person; approved made, denied not', async (t) => {
  const task = await create('ask', ['contacts', 'notes']);
  const carol = 'carol@example.net';
  const calls: Call[] = [
    ['read_contact', { email: carol }],
    ['create_contact', { email: carol, name: 'Carol' }],
    ['set_notes', { email: carol, notes: 'VIP' }],
  ];
  let told: Told[] = [];
  ai.reply = (call) => {
    const messages = call.body.messages;
    if (messages.at(-1)!.role === 'user')
      return { content: null, toolCalls: calls.map(([name, args]) => ({ name, arguments: JSON.stringify(args) })) };
    told = messages.slice(-3).map((m) => JSON.parse(m.content));
    return { content: 'Done.' };
  };
  const runId = await run(task.id);
  const pending = () =>
    eventually(async () => {
      const [waiting] = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/approvals?status=pending`)).json().data;
      return waiting;
    });
  const first = await pending();
  t.match(first, { tool: 'create_contact' });
  t.equal((await h.request(ws.apiKey, 'GET', `/contacts/${carol}`)).statusCode, 404, 'not made before approval');
  await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/approvals/${first.id}/approve`);
  const second = await pending();
  t.match(second, { tool: 'set_notes' });
  await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/approvals/${second.id}/deny`);
  t.match(
    await eventually(async () => {
      const read = await status(task.id, runId);
      return read.status === 'succeeded' && read;
    }),
    { status: 'succeeded' },
  );
  t.match(told[0], { error: { code: 'resource_not_found' } }, 'the read is made at once');
  t.match(told[1], { email: carol, name: 'Carol' });
  t.match(told[2], { error: { code: 'approval_denied' } });
  t.match((await h.request(ws.apiKey, 'GET', `/contacts/${carol}`)).json(), { name: 'Carol', notes: null });
});

t.test('another workspace’s ids answer as missing ones', async (t) => {
  const other = await setUp('tasks-other.example.com');
  const key = other.ws.apiKey;
  await h.request(key, 'POST', '/contacts', { email: 'dora@example.net', notes: 'secret' });
  const audience = (await h.request(key, 'POST', '/audiences', { name: 'Theirs' })).json();
  const template = (
    await h.request(key, 'POST', '/templates', { name: 'Theirs Only', subject: 'x', publish: false })
  ).json();
  const sent = await h.request(key, 'POST', '/emails', {
    from: other.a.address,
    to: 'ann@example.org',
    subject: 'Theirs',
    text: 'x',
  });
  const left = await h.request(key, 'POST', '/suppressions/unsubscribes', { email: 'dora@example.net' });
  t.equal(left.statusCode, 201, left.body);
  const theirs = await h.request(key, 'POST', '/broadcasts', {
    from: other.a.address,
    templateId: (await broadcastTemplate(h, key, 'Their Letter')).id,
    audienceIds: [audience.id],
    scheduledAt: new Date(Date.now() + 86_400_000).toISOString(),
  });
  t.equal(theirs.statusCode, 201, theirs.body);
  const { threadId } = await fileFromAnn(h, other.ws.workspaceId, mailbox(other.a), 'Theirs', undefined, [
    await attached(Buffer.from('theirs'), 't.txt', 'text/plain'),
  ]);
  const [file] = (await h.request(key, 'GET', `/files?threadId=${threadId}`)).json().data;
  const task = await create('organize', NEW_TOOLKITS);
  const dora = 'dora@example.net';
  const { run, told } = await calling(task.id, [
    ['read_notes', { email: dora }],
    ['set_notes', { email: dora, notes: 'mine now' }],
    ['update_contact', { email: dora, name: 'Dora' }],
    ['list_audience_contacts', { audienceId: audience.id }],
    ['add_to_audience', { audienceId: audience.id, email: 'bob@example.net' }],
    ['read_template', { template: template.id }],
    ['read_template', { template: template.slug }],
    ['read_sent_email', { emailId: sent.json().id }],
    ['list_email_events', { emailId: sent.json().id }],
    ['list_attachments', { threadId }],
    ['read_file', { fileId: file.id }],
    ['list_sent_emails', {}],
    ['read_subscription', { email: dora }],
    ['unsubscribe_contact', { email: dora, audienceId: audience.id }],
    ['resubscribe_contact', { email: dora }],
    ['list_unsubscribed', {}],
    ['list_unsubscribed', { audienceId: audience.id }],
    ['template_analytics', { template: template.id }],
    ['template_analytics', { template: template.slug }],
    ['list_broadcasts', { limit: 25 }],
    ['sending_overview', {}],
    ['audience_growth', { audienceId: audience.id }],
    ['audience_growth', {}],
  ]);
  t.equal(run.status, 'succeeded');
  t.same(
    told.slice(0, 11).map((x) => x.error?.code),
    [
      'resource_not_found',
      'contact_not_found',
      'contact_not_found',
      'resource_not_found',
      'audience_not_found',
      'resource_not_found',
      'resource_not_found',
      'resource_not_found',
      'resource_not_found',
      'resource_not_found',
      'resource_not_found',
    ],
  );
  t.notOk(
    (told[11]!.emails as { id: string }[]).some((e) => e.id === sent.json().id),
    'their mail is not in the list',
  );
  t.same(
    told[12],
    { email: dora, isContact: false, subscribed: true, unsubscribedSince: null, unsubscribes: [], suppressed: null },
    'their contact and its unsubscribe are not ours',
  );
  t.match(told[13], { error: { code: 'audience_not_found' } });
  t.match(told[14], { error: { code: 'resource_not_found' } }, 'their unsubscribe is not reached');
  t.notOk(
    (told[15]!.unsubscribes as { email: string }[]).some((u) => u.email === dora),
    'their unsubscribes are not listed',
  );
  t.match(told[16], { error: { code: 'audience_not_found' } });
  t.match(told[17], { error: { code: 'resource_not_found' } }, 'their template has no analytics of ours');
  t.match(told[18], { error: { code: 'resource_not_found' } });
  t.notOk(
    (told[19]!.broadcasts as { id: string }[]).some((b) => b.id === theirs.json().id),
    'their broadcast is not listed',
  );
  t.same(
    told[20],
    { lanes: (await h.request(ws.apiKey, 'GET', '/sending/streams')).json().data },
    'our lanes, not theirs',
  );
  t.match(told[21], { error: { code: 'audience_not_found' } });
  t.notOk(
    (told[22]!.audiences as { audienceId: string }[]).some((x) => x.audienceId === audience.id),
    'their audience does not grow ours',
  );
  t.match((await h.request(key, 'GET', `/contacts/${dora}`)).json(), { name: null, notes: 'secret' }, 'untouched');
  t.match(
    (await h.request(key, 'GET', `/suppressions/unsubscribes?email=${dora}`)).json().data,
    [{ id: left.json().id, audienceId: null }],
    'their unsubscribe holds',
  );
});

t.test('bad arguments are failed steps the model is told of', async (t) => {
  const task = await create('organize', NEW_TOOLKITS);
  const calls: Call[] = [
    ['create_contact', { email: 'not an address' }],
    ['create_contact', { email: 'eve@example.net', notes: 'x'.repeat(10_001) }],
    ['create_contact', { email: 'eve@example.net', attributes: { '1st': 'x' } }],
    ['update_contact', { email: 'bob@example.net' }],
    ['set_notes', { email: 'bob@example.net' }],
    ['read_notes', {}],
    ['list_sent_emails', { limit: 0 }],
    ['read_sent_email', { emailId: 'thr_1' }],
    ['list_email_events', '{not json'],
    ['list_audiences', { limit: 26 }],
    ['list_audience_contacts', { audienceId: 'VIP' }],
    ['add_to_audience', { audienceId: 'aud_1' }],
    ['list_templates', { search: 5 }],
    ['read_template', { template: '' }],
    ['list_attachments', { threadId: 'em_1' }],
    ['read_file', { fileId: 'fil_1', extra: true }],
    ['read_subscription', { email: 'nobody' }],
    ['unsubscribe_contact', { email: 'jo@example.net', audienceId: 'Weekly' }],
    ['resubscribe_contact', {}],
    ['list_unsubscribed', { audienceId: 'everything' }],
    ['list_unsubscribed', { source: 'link', limit: 26 }],
    ['template_analytics', {}],
    ['template_analytics', { template: 'order-shipped', from: '2026-02-30' }],
    ['template_analytics', { template: 'order-shipped', from: '2026-03-02', to: '2026-03-01' }],
    ['template_analytics', { template: 'order-shipped', from: '2025-01-01', to: '2026-01-02' }],
    ['sending_overview', { lane: 'broadcast' }],
    ['list_broadcasts', { limit: 0 }],
    ['audience_growth', { days: 0 }],
    ['audience_growth', { days: 1096 }],
    ['audience_growth', { audienceId: 'Readers' }],
  ];
  const { run, told } = await calling(task.id, calls);
  t.equal(run.status, 'succeeded');
  t.same(
    told.map((x) => x.error?.code),
    calls.map(() => 'invalid_arguments'),
  );
  t.match(told[1], { error: { message: /notes: at most 10000 characters/ } }, 'the request’s own limits');
  t.match(told[22], { error: { message: /from: Not a date of the calendar/ } });
  t.match(told[23], { error: { message: /from: `from` is after `to`/ } });
  t.match(told[24], { error: { message: /at most 366 days/ } }, 'the API’s period limit');
  const steps = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${run.id}/steps?limit=100`)).json().data;
  t.same(
    steps.filter((s: { kind: string }) => s.kind === 'tool').map((s: { error: { code: string } }) => s.error.code),
    calls.map(() => 'invalid_arguments'),
  );
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/eve@example.net')).statusCode, 404);
  t.equal((await h.request(ws.apiKey, 'GET', '/suppressions/unsubscribes?email=jo@example.net')).json().data.length, 0);
});

t.test('the creator’s scopes now: a call past them is refused', async (t) => {
  const mail = ['tasks:write', 'threads:read', 'threads:write', 'emails:read', 'emails:send', 'labels:write'];
  const all = [...new Set([...mail, ...NEW_TOOLKITS.flatMap((k) => TOOLKIT_SCOPES[k])])];
  const role = (await h.request(ws.apiKey, 'POST', '/roles', { name: 'Task maker', permissions: all })).json();
  const key = (await h.request(ws.apiKey, 'POST', '/keys', { name: 'Tasks', scopes: all, roleId: role.id })).json();
  const task = await create('organize', NEW_TOOLKITS, key.token);
  const narrowed = await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { permissions: ['tasks:write'] });
  t.equal(narrowed.statusCode, 200, narrowed.body);
  const calls: Call[] = [
    ['create_contact', { email: 'fay@example.net' }],
    ['update_contact', { email: 'bob@example.net', name: 'B' }],
    ['read_notes', { email: 'bob@example.net' }],
    ['set_notes', { email: 'bob@example.net', notes: 'x' }],
    ['list_sent_emails', {}],
    ['read_sent_email', { emailId: 'em_1' }],
    ['list_email_events', { emailId: 'em_1' }],
    ['list_audiences', {}],
    ['list_audience_contacts', { audienceId: 'aud_1' }],
    ['add_to_audience', { audienceId: 'aud_1', email: 'bob@example.net' }],
    ['list_templates', {}],
    ['read_template', { template: 'order-shipped' }],
    ['list_attachments', { threadId: 'thr_1' }],
    ['read_file', { fileId: 'fil_1' }],
    ['read_subscription', { email: 'bob@example.net' }],
    ['unsubscribe_contact', { email: 'bob@example.net' }],
    ['list_unsubscribed', {}],
    ['template_analytics', { template: 'order-shipped' }],
    ['sending_overview', {}],
    ['list_broadcasts', {}],
    ['audience_growth', {}],
  ];
  const { run, told } = await calling(task.id, calls);
  t.equal(run.status, 'succeeded');
  t.same(
    told.map((x) => x.error?.code),
    calls.map(() => 'insufficient_authority'),
  );
  t.match(told[0], { error: { message: /contacts:write/ } });
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/fay@example.net')).statusCode, 404);
});

t.test('a turn makes at most CALLS_PER_TURN calls; the rest are refused with it, no steps', async (t) => {
  const task = await create('ask', ['contacts', 'notes']);
  const calls: Call[] = [
    ...Array.from({ length: CALLS_PER_TURN }, (_, i): Call => ['find_contacts', { q: `nobody${i}` }]),
    ['create_contact', { email: 'ida@example.net' }],
    ['set_notes', { email: 'ida@example.net', notes: 'x' }],
  ];
  let told: Told[] = [];
  let turns = 0;
  ai.reply = (call) => {
    turns++;
    const messages = call.body.messages;
    if (messages.at(-1)!.role === 'user')
      return { content: null, toolCalls: calls.map(([name, args]) => ({ name, arguments: JSON.stringify(args) })) };
    told = messages.filter((m) => m.role === 'tool').map((m) => JSON.parse(m.content));
    return { content: 'Done.' };
  };
  const runId = await run(task.id);
  const done = await eventually(async () => {
    const read = await status(task.id, runId);
    return ['succeeded', 'failed'].includes(read.status) && read;
  });
  t.match(done, { status: 'succeeded', steps: 2 + CALLS_PER_TURN }, 'two turns and the calls made');
  t.equal(turns, 2);
  t.equal(told.length, calls.length, 'the model is told of every call it asked for');
  t.same(
    told.slice(0, CALLS_PER_TURN).map((x) => x.contacts),
    calls.slice(0, CALLS_PER_TURN).map(() => []),
  );
  for (const x of told.slice(CALLS_PER_TURN))
    t.match(x, { error: { code: 'too_many_calls', message: new RegExp(`at most ${CALLS_PER_TURN} calls`) } });
  const steps = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/runs/${runId}/steps?limit=100`)).json().data;
  t.same(
    steps.map((s: { kind: string; tool: string | null }) => (s.kind === 'tool' ? s.tool : s.kind)),
    ['model', ...calls.slice(0, CALLS_PER_TURN).map(([name]) => name), 'model'],
  );
  t.same(
    steps[0].toolCalls.map((c: { refused: boolean }) => c.refused),
    calls.map((_, i) => i >= CALLS_PER_TURN),
    'the model step keeps every call asked for, the refused ones said so',
  );
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/approvals`)).json().data.length,
    0,
    'a refused write asks no one',
  );
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/ida@example.net')).statusCode, 404, 'nor is made');
});

t.test('subscriptions: an address’s standing read, unsubscribed and taken back as the API does', async (t) => {
  const gus = 'gus@example.net';
  const contact = (await h.request(ws.apiKey, 'POST', '/contacts', { email: gus, name: 'Gus' })).json();
  const weekly = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Weekly' })).json();
  const suppressed = await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'hal@example.net' });
  t.equal(suppressed.statusCode, 201, suppressed.body);
  const token = await h.system.sending.unsubscribeLinks.token({
    partition: ws.workspaceId,
    email: 'ivy@example.net',
    audienceId: null,
  });
  const click = await h.app.inject({
    method: 'POST',
    url: `/unsubscribe/${token}`,
    payload: 'List-Unsubscribe=One-Click',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(click.statusCode, 200, 'ivy unsubscribed herself with her link');
  const task = await create('organize', ['subscriptions']);
  const { run, told } = await calling(task.id, [
    ['read_subscription', { email: ' Gus@Example.net ' }],
    ['unsubscribe_contact', { email: gus, audienceId: weekly.id }],
    ['unsubscribe_contact', { email: gus }],
    ['unsubscribe_contact', { email: gus }],
    ['resubscribe_contact', { email: gus, audienceId: weekly.id }],
    ['resubscribe_contact', { email: gus, audienceId: weekly.id }],
    ['read_subscription', { email: 'hal@example.net' }],
    ['read_subscription', { email: 'ivy@example.net' }],
    ['resubscribe_contact', { email: 'ivy@example.net' }],
  ]);
  t.equal(run.status, 'succeeded');
  t.same(told[0], {
    email: gus,
    isContact: true,
    subscribed: true,
    unsubscribedSince: null,
    unsubscribes: [],
    suppressed: null,
  });
  t.match(told[1], { subscribed: true, unsubscribes: [{ audienceId: weekly.id, source: 'api', removable: true }] });
  t.match(told[2], {
    subscribed: false,
    unsubscribedSince: String,
    unsubscribes: [{ audienceId: weekly.id }, { audienceId: null, source: 'api' }],
  });
  t.same(told[3], told[2], 'unsubscribed already: it stays as it was');
  t.match(told[4], { subscribed: false, unsubscribes: [{ audienceId: null }] });
  t.equal((told[4]!.unsubscribes as unknown[]).length, 1, 'the audience’s unsubscribe is taken back');
  t.match(told[5], { error: { code: 'resource_not_found' } }, 'nothing to take back');
  t.match(told[6], { isContact: false, subscribed: true, suppressed: { reason: 'manual', since: String } });
  t.match(told[7], { subscribed: false, unsubscribes: [{ audienceId: null, source: 'one-click', removable: false }] });
  t.match(told[8], { error: { code: 'unsubscribe_not_removable' } }, 'only the recipient undoes their own');
  const listed = (await h.request(ws.apiKey, 'GET', `/suppressions/unsubscribes?email=${gus}`)).json().data;
  t.match(listed, [{ audienceId: null, source: 'api', contactId: contact.id }]);
  t.equal(listed.length, 1, 'as the API sees it');
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/suppressions/unsubscribes?email=ivy@example.net')).json().data.length,
    1,
    'hers holds',
  );
});

t.test('subscriptions: a creator without the settings scopes has every call refused', async (t) => {
  const scopes = ['tasks:write', 'threads:read', 'threads:write', 'emails:read', 'emails:send', 'labels:write'];
  const permissions = [...scopes, ...TOOLKIT_SCOPES.subscriptions];
  const role = (await h.request(ws.apiKey, 'POST', '/roles', { name: 'Contacts only', permissions })).json();
  const key = (
    await h.request(ws.apiKey, 'POST', '/keys', { name: 'Contacts', scopes: permissions, roleId: role.id })
  ).json();
  const task = await create('organize', ['subscriptions'], key.token);
  const kim = 'kim@example.net';
  await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: kim });
  const { run, told } = await calling(task.id, [
    ['read_subscription', { email: kim }],
    ['unsubscribe_contact', { email: 'lea@example.net' }],
    ['resubscribe_contact', { email: kim }],
  ]);
  t.equal(run.status, 'succeeded');
  t.match(told, [
    { error: { code: 'insufficient_authority', message: /settings:read/ } },
    { error: { code: 'insufficient_authority', message: /settings:write/ } },
    { error: { code: 'insufficient_authority', message: /settings:write/ } },
  ]);
  const list = (email: string) =>
    h.request(ws.apiKey, 'GET', `/suppressions/unsubscribes?email=${email}`).then((r) => r.json().data.length);
  t.equal(await list('lea@example.net'), 0, 'not unsubscribed');
  t.equal(await list(kim), 1, 'not taken back');
});

t.test('subscriptions under ask: a change waits for a person; approved made, denied not', async (t) => {
  const task = await create('ask', ['subscriptions']);
  const jo = 'jo@example.net';
  const done = calling(task.id, [
    ['read_subscription', { email: jo }],
    ['unsubscribe_contact', { email: jo }],
    ['resubscribe_contact', { email: jo }],
  ]);
  const pending = () =>
    eventually(async () => {
      const [waiting] = (await h.request(ws.apiKey, 'GET', `/tasks/${task.id}/approvals?status=pending`)).json().data;
      return waiting;
    });
  const list = () => h.request(ws.apiKey, 'GET', `/suppressions/unsubscribes?email=${jo}`).then((r) => r.json().data);
  const first = await pending();
  t.match(first, { tool: 'unsubscribe_contact' });
  t.same(await list(), [], 'not made before approval');
  await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/approvals/${first.id}/approve`);
  const second = await pending();
  t.match(second, { tool: 'resubscribe_contact' });
  await h.request(ws.apiKey, 'POST', `/tasks/${task.id}/approvals/${second.id}/deny`);
  const { run, told } = await done;
  t.equal(run.status, 'succeeded');
  t.match(told, [
    { email: jo, subscribed: true },
    { email: jo, subscribed: false },
    { error: { code: 'approval_denied' } },
  ]);
  t.match(await list(), [{ email: jo, audienceId: null, source: 'api' }], 'unsubscribed, and still');
});

t.test('subscriptions: the unsubscribed listed, newest first, as the API lists them', async (t) => {
  const monthly = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Monthly' })).json();
  for (const body of [
    { email: 'max@example.net' },
    { email: 'ned@example.net', audienceId: monthly.id },
    { email: 'ola@example.net' },
  ]) {
    const res = await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', body);
    t.equal(res.statusCode, 201, res.body);
  }
  const api = async (query: string) =>
    (await h.request(ws.apiKey, 'GET', `/suppressions/unsubscribes?${query}`)).json().data;
  const task = await create('organize', ['subscriptions']);
  const { run, told } = await calling(task.id, [
    ['list_unsubscribed', { limit: 2 }],
    ['list_unsubscribed', { audienceId: monthly.id }],
    ['list_unsubscribed', { audienceId: 'all', source: 'api', limit: 25 }],
    ['list_unsubscribed', { source: 'preferences' }],
  ]);
  t.equal(run.status, 'succeeded');
  t.same(told[0], { unsubscribes: await api('limit=2') }, 'the newest two');
  t.match(told[0], { unsubscribes: [{ email: 'ola@example.net' }, { email: 'ned@example.net' }] });
  t.same(told[1], { unsubscribes: await api(`audienceId=${monthly.id}`) });
  t.match(told[1], { unsubscribes: [{ email: 'ned@example.net', audienceId: monthly.id, removable: true }] });
  t.same(told[2], { unsubscribes: await api('audienceId=all&source=api&limit=25') });
  t.ok(
    (told[2]!.unsubscribes as { audienceId: string | null }[]).every((u) => u.audienceId === null),
    'from everything only',
  );
  t.same(told[3], { unsubscribes: [] });
});

t.test('insights: a template’s analytics, the sending lanes and the broadcasts, as the API reads them', async (t) => {
  const tpl = await broadcastTemplate(h, ws.apiKey, 'Insight Letter');
  const sent = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/send`, {
    from: a.address,
    to: 'ann@example.org',
    props: { name: 'Ann' },
  });
  t.equal(sent.statusCode, 201, sent.body);
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/emails/${sent.json().id}`)).json().status === 'delivered',
  );
  const audience = await audienceWith(h, ws.apiKey, 'Readers', ['pia@example.org']);
  const later = new Date(Date.now() + 86_400_000).toISOString();
  const broadcast = await h.request(ws.apiKey, 'POST', '/broadcasts', {
    name: 'Next week',
    from: a.address,
    templateId: tpl.id,
    audienceIds: [audience.id],
    scheduledAt: later,
  });
  t.equal(broadcast.statusCode, 201, broadcast.body);
  const today = new Date().toISOString().slice(0, 10);
  const get = async (path: string) => (await h.request(ws.apiKey, 'GET', path)).json();
  const task = await create('organize', ['insights']);
  const { run, told } = await calling(task.id, [
    ['template_analytics', { template: tpl.slug }],
    ['template_analytics', { template: tpl.id, from: today, to: today }],
    ['template_analytics', { template: tpl.id, to: '2020-01-01' }],
    ['sending_overview', {}],
    ['list_broadcasts', { limit: 1 }],
    ['audience_growth', { audienceId: audience.id, days: 7 }],
    ['audience_growth', {}],
  ]);
  t.equal(run.status, 'succeeded');
  const analytics = await get(`/templates/${tpl.id}/analytics`);
  t.same(told[0], analytics, 'by slug, the last 30 days');
  t.match(told[0], { templateId: tpl.id, to: today, totals: { sent: 1, delivered: 1 }, versions: [{ version: 1 }] });
  t.same(told[1], await get(`/templates/${tpl.id}/analytics?from=${today}&to=${today}`));
  t.match(told[2], { from: '2019-12-03', to: '2020-01-01', totals: { sent: 0 }, versions: [] }, 'a quiet period');
  const lanes = (await get('/sending/streams')).data;
  t.same(told[3], { lanes });
  t.match(told[3], { lanes: [{ stream: 'transactional', status: 'active' }, { stream: 'broadcast' }] });
  t.ok((lanes[0].sent as number) >= 1, 'the lane counts the mail sent');
  t.same(told[4], { broadcasts: (await get('/broadcasts?limit=1')).data });
  t.match(told[4], {
    broadcasts: [{ id: broadcast.json().id, status: 'scheduled', progress: { recipients: null, sent: 0 } }],
  });
  const { since: _, until: __, ...growth } = await get(`/audiences/growth?audienceIds=${audience.id}&days=7`);
  t.match(told[5], { ...growth, since: String, until: String }, 'as the endpoint counts it');
  t.match(told[5], {
    audiences: [{ audienceId: audience.id, name: 'Readers', before: 0, total: 1, subscribed: 1, added: 1 }],
    totals: { contacts: 1, busiest: today },
  });
  t.ok(
    (told[6]!.audiences as { audienceId: string }[]).some((x) => x.audienceId === audience.id),
    'every audience without one named',
  );
});

t.test('insights: each call checks the scope its API endpoint asks, in the creator’s authority now', async (t) => {
  const mail = ['tasks:write', 'threads:read', 'threads:write', 'emails:read', 'emails:send', 'labels:write'];
  const permissions = [...new Set([...mail, ...TOOLKIT_SCOPES.insights])];
  const role = (await h.request(ws.apiKey, 'POST', '/roles', { name: 'Insights only', permissions })).json();
  const key = (
    await h.request(ws.apiKey, 'POST', '/keys', { name: 'Insights', scopes: permissions, roleId: role.id })
  ).json();
  const task = await create('organize', ['insights'], key.token);
  const { run, told } = await calling(task.id, [
    ['template_analytics', { template: 'order-shipped' }],
    ['sending_overview', {}],
    ['list_broadcasts', {}],
    ['audience_growth', {}],
  ]);
  t.equal(run.status, 'succeeded');
  t.match(told, [
    { error: { code: 'insufficient_authority', message: /templates:read/ } },
    { error: { code: 'insufficient_authority', message: /settings:read/ } },
    { broadcasts: Array },
    { error: { code: 'insufficient_authority', message: /audiences:read/ } },
  ]);
});
