import { mailboxOwnerOf } from '../../domain/shared/mailbox-owners.ts';
import t from 'tap';
import { generate } from 'otplib';
import { answerSecondFactor, answerSignInCode, askSignInCode, signOut } from '../../commands/accounts/sign-in.ts';
import { confirmTwoFactor, startTwoFactorSetup } from '../../commands/accounts/two-factor.ts';
import { acceptInvitation } from '../../commands/members/handlers.ts';
import { findInvitation } from '../../projections/members/queries.ts';
import { pauseStream } from '../../commands/sending-streams/handlers.ts';
import { createLabel, deleteLabel, updateLabel } from '../../commands/labels/handlers.ts';
import { createRule, deleteRule } from '../../commands/rules/handlers.ts';
import { newId } from '../../commands/ids.ts';
import { createTask, deleteTask, pauseTask, queueTaskRun, updateTask } from '../../commands/tasks/handlers.ts';
import { finishToolCall, requestApproval, startRun, takeTurn } from '../../commands/tasks/runs.ts';
import type { TaskSettings } from '../../domain/tasks/events.ts';
import { evaluateMailbox, recordRejection } from '../../commands/rules/run.ts';
import { factsOf } from '../../domain/rules/evaluate.ts';
import { deleteThread, fileMessage, updateThread } from '../../commands/threads/handlers.ts';
import { mailboxLookups, ruleRunPorts } from '../../system.ts';
import { arrivingMessage } from '../support/inbound.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { createTempInbox, expireTempInbox, receiveTempMail } from '../../commands/temp-inboxes/handlers.ts';
import { startTestApp } from '../support/app.ts';
import { RESEND_KEYS, resendData, startResendServer } from '../support/providers/resend.ts';
import { settledBroadcast } from '../support/broadcasts.ts';
import { waitExport } from '../support/exports.ts';
import { waitImport } from '../support/imports.ts';
import { eventually } from '../support/receiver.ts';

async function rows(h: Awaited<ReturnType<typeof startTestApp>>, schema: string, table: string) {
  // Sorted here, not in SQL: tables differ in how many columns make a row unique.
  const { rows } = await h.system.database.pool.query(`SELECT * FROM ${schema}.${table}`);
  return rows.map((r) => JSON.stringify(r)).sort();
}

t.test('a rebuilt read model equals the live one, and swaps in while the server answers', async (t) => {
  const resend = await startResendServer(t, resendData({ audiences: 1, perAudience: 3, unsubscribedEvery: 2 }));
  const h = await startTestApp(t, {
    providerImports: { baseUrls: { resend: resend.url }, allowPrivate: true, pollMs: 20 },
    // A run's steps are written below as the assistant writes them; no assistant works them here.
    tasks: { runner: { start: false } },
  });
  // A disposable inbox with a message, and one gone at its expiry (temp inboxes). First: the
  // workspaces' export below runs on in the background, and its timing is left as it was.
  const tempInbox = (lifetimeMs: number) =>
    createTempInbox(
      h.system.commands,
      { network: '192.0.2.0/24', domain: 'disposable.example.net', lifetimeMs },
      new Date().toISOString(),
    );
  const keptInbox = await tempInbox(3_600_000);
  const tempMail = { mailFrom: 'olga@outside.test', raw: { sha256: 'a'.repeat(64), size: 100 } };
  const { summary } = arrivingMessage('t1@outside.test');
  await receiveTempMail(h.system.commands, keptInbox.inboxId, { ...tempMail, summary }, new Date().toISOString());
  const expiring = await tempInbox(1);
  await expireTempInbox(h.system.commands, expiring.inboxId, new Date(Date.now() + 1000).toISOString());
  const keys = [];
  for (let w = 0; w < 3; w++) {
    const ws = await h.workspace();
    for (let i = 0; i < 5; i++)
      keys.push({
        owner: ws.apiKey,
        key: (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['emails:send'], name: `k${i}` })).json(),
      });
    await h.request(ws.apiKey, 'DELETE', `/keys/${keys[keys.length - 1]!.key.id}`);
    const rotated = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['keys:write'] })).json();
    await h.request(rotated.token, 'POST', '/keys/self/rotate');
    await h.request(ws.apiKey, 'GET', '/roles');
    const role = (
      await h.request(ws.apiKey, 'POST', '/roles', { name: `Ops ${w}`, permissions: ['emails:read'] })
    ).json();
    await h.request(ws.apiKey, 'PATCH', `/roles/${role.id}`, { description: 'on call' });
    const gone = (await h.request(ws.apiKey, 'POST', '/roles', { name: 'Temp', permissions: [] })).json();
    await h.request(ws.apiKey, 'DELETE', `/roles/${gone.id}`);
    for (let i = 0; i < 3; i++) await h.request(ws.apiKey, 'POST', '/suppressions', { email: `s${i}@w${w}.test` });
    const removed = (await h.request(ws.apiKey, 'POST', '/suppressions', { email: `gone@w${w}.test` })).json();
    await h.request(ws.apiKey, 'DELETE', `/suppressions/${removed.id}`);
    for (let i = 0; i < 2; i++)
      await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: `u${i}@w${w}.test` });
    const rejoined = (
      await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: `back@w${w}.test` })
    ).json();
    await h.request(ws.apiKey, 'DELETE', `/suppressions/unsubscribes/${rejoined.id}`);
    const body = { subject: 'Hi', document: { body: [{ kind: 'Text', text: 'x' }] }, publish: true };
    const tpl = (await h.request(ws.apiKey, 'POST', '/templates', { name: `Tpl ${w}`, ...body })).json();
    await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { name: `Tpl ${w} renamed`, subject: 'Two' });
    const dropped = (await h.request(ws.apiKey, 'POST', '/templates', { name: 'Dropped' })).json();
    await h.request(ws.apiKey, 'DELETE', `/templates/${dropped.id}`);
    const hook = (await h.request(ws.apiKey, 'POST', '/webhooks', { url: `https://hooks.example.com/${w}` })).json();
    await h.request(ws.apiKey, 'POST', `/webhooks/${hook.id}/rotate-secret`);
    await h.request(ws.apiKey, 'PATCH', `/webhooks/${hook.id}`, { enabled: false, description: 'paused' });
    const unhooked = (
      await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://hooks.example.com/gone' })
    ).json();
    await h.request(ws.apiKey, 'DELETE', `/webhooks/${unhooked.id}`);
    const aut = (
      await h.request(ws.apiKey, 'POST', '/automations', {
        name: `Aut ${w}`,
        trigger: { event: 'go' },
        steps: [{ type: 'wait', minutes: 60 }],
      })
    ).json();
    await h.request(ws.apiKey, 'POST', `/automations/${aut.id}/pause`);
    await h.request(ws.apiKey, 'POST', '/events/batch', {
      events: [
        { name: 'go', email: `c@w${w}.test`, createContact: true, properties: { n: w } },
        { name: 'seen', email: `c@w${w}.test` },
      ],
    });
    const vip = (await h.request(ws.apiKey, 'POST', '/audiences', { name: `VIP ${w}` })).json();
    const trial = (await h.request(ws.apiKey, 'POST', '/audiences', { name: `Trial ${w}` })).json();
    await h.request(ws.apiKey, 'POST', '/contacts', { email: `v@w${w}.test`, audienceIds: [vip.id, trial.id] });
    await h.request(ws.apiKey, 'PUT', `/audiences/${vip.id}/contacts/c@w${w}.test`);
    await h.request(ws.apiKey, 'DELETE', `/audiences/${trial.id}/contacts/v@w${w}.test`);
    const closed = (await h.request(ws.apiKey, 'POST', '/audiences', { name: `Closed ${w}` })).json();
    await h.request(ws.apiKey, 'DELETE', `/audiences/${closed.id}`);
    const domain = (await h.request(ws.apiKey, 'POST', '/domains', { domain: `rebuild-w${w}.com` })).json();
    await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { catchAll: true });
    await h.request(ws.apiKey, 'POST', `/domains/${domain.id}/dkim/rotate`);
    const parked = (await h.request(ws.apiKey, 'POST', '/domains', { domain: `parked-w${w}.com` })).json();
    await h.request(ws.apiKey, 'DELETE', `/domains/${parked.id}`);
    const mailbox = (await h.request(ws.apiKey, 'POST', '/addresses', { address: `a@rebuild-w${w}.com` })).json();
    await h.request(ws.apiKey, 'POST', `/addresses/${mailbox.id}/forwards`, { destinations: [`f@w${w}.example.org`] });
    await h.request(ws.apiKey, 'POST', `/addresses/${mailbox.id}/app-passwords`, { name: 'Phone' });
    const sig = { address: `a@rebuild-w${w}.com`, name: 'Work', html: '<p>A</p>' };
    await h.request(ws.apiKey, 'POST', '/signatures', sig);
    const leaving = (await h.request(ws.apiKey, 'POST', '/addresses', { address: `b@rebuild-w${w}.com` })).json();
    await h.request(ws.apiKey, 'POST', '/signatures', { ...sig, address: `b@rebuild-w${w}.com` });
    const viewer = (await h.request(ws.apiKey, 'GET', '/roles')).json().data.find((r: any) => r.builtin === 'viewer');
    const invite = (email: string) =>
      h.request(ws.apiKey, 'POST', '/members', {
        email,
        roleId: viewer.id,
        addressIds: [mailbox.id],
        access: 'viewer',
      });
    const joining = (await invite(`joined@w${w}.example.org`)).json();
    await invite(`pending@w${w}.example.org`);
    const invitation = await findInvitation(h.system.readDb, ws.workspaceId, joining.id);
    await acceptInvitation(
      h.system.commands,
      { workspaceId: ws.workspaceId, invitationId: joining.id, nonce: invitation!.nonce, email: joining.email },
      new Date().toISOString(),
    );
    await h.request(ws.apiKey, 'DELETE', `/addresses/${leaving.id}`);
    const mail = { from: `a@rebuild-w${w}.com`, to: ['x@example.org', `s0@w${w}.test`], subject: 'Hi', text: 'x' };
    await h.request(ws.apiKey, 'POST', '/emails', { ...mail, tags: [{ name: 'n', value: `${w}` }] });
    await h.request(ws.apiKey, 'POST', '/emails/batch', { emails: [mail, { ...mail, to: `s1@w${w}.test` }] });
    await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/send`, { from: mail.from, to: `t@w${w}.test` });
    const cast = await h.request(ws.apiKey, 'POST', '/broadcasts', {
      from: mail.from,
      templateId: tpl.id,
      audienceIds: [vip.id],
    });
    await settledBroadcast(h, ws.apiKey, cast.json().id);
    const later = (
      await h.request(ws.apiKey, 'POST', '/emails', {
        ...mail,
        scheduledAt: new Date(Date.now() + 3_600_000).toISOString(),
      })
    ).json();
    await h.request(ws.apiKey, 'POST', `/emails/${later.id}/cancel`);
    // Arriving mail as the receiving slice files it: a thread of two, read and archived; one deleted.
    const box = { addressId: mailbox.id, address: mailbox.address, domainId: domain.id, domain: domain.domain };
    const system = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
    // Each message's raw bytes are stored, as the receiving slice stores them: the export below reads them.
    const file = async (headerId: string, extra: { subject?: string; inReplyTo?: string[] } = {}) => {
      const raw = await h.system.blobs.put(
        Buffer.from(`Message-ID: <${headerId}>\r\nSubject: ${extra.subject ?? 'Hello'}\r\n\r\nHello there\r\n`),
      );
      const message = arrivingMessage(headerId, extra);
      return fileMessage(h.system.commands, mailboxLookups(h.system.readDb), ws.workspaceId, box, {
        ...message,
        raw: { sha256: raw.sha256, size: raw.size },
      });
    };
    const first = (await file(`r${w}@outside.test`))!;
    await file(`r${w}-2@outside.test`, { inReplyTo: [`r${w}@outside.test`], subject: 'Re: Hello' });
    const firstThread = { id: first.threadId, addressId: box.addressId, domainId: box.domainId };
    await updateThread(h.system.commands, system, firstThread, { unread: false }, new Date().toISOString());
    await updateThread(h.system.commands, system, firstThread, { label: 'archive' }, new Date().toISOString());
    const binned = (await file(`bin${w}@outside.test`, { subject: 'Other' }))!;
    await deleteThread(h.system.commands, system, binned.threadId, new Date().toISOString());
    await deleteThread(h.system.commands, system, binned.threadId, new Date().toISOString());
    await file(`third${w}@outside.test`, { subject: 'Third' });
    // Labels of the mailbox: one on the read thread, one renamed, one deleted off a thread.
    const owner = mailboxOwnerOf(box);
    const now = () => new Date().toISOString();
    const label = async (name: string) =>
      (await createLabel(h.system.commands, system, { owner, address: box.address, name, color: null }, now())).labelId;
    const [kept, renamed, unlabelled] = [await label('Receipts'), await label('Later'), await label('Gone')];
    await updateThread(h.system.commands, system, firstThread, { add: [kept, unlabelled] }, now());
    await updateLabel(h.system.commands, system, { owner, labelId: renamed, name: 'Someday', color: '#aa0000' }, now());
    await deleteLabel(h.system.commands, system, { owner, labelId: unlabelled }, now());
    // A mailbox import of two old messages, settled, and one cancelled while uploading.
    const old = [`o${w}`, `o${w}-2`]
      .map((id) => `From x Mon Jan  1 00:00:00 2024\nMessage-ID: <${id}@old.test>\nSubject: Old ${id}\n\nold\n`)
      .join('\n');
    const imported = await h.request(
      ws.apiKey,
      'POST',
      `/imports/upload?addressId=${mailbox.id}&filename=old.mbox`,
      Buffer.from(old),
      { 'content-type': 'application/mbox' },
    );
    t.equal(imported.statusCode, 201, 'a mailbox import');
    t.equal((await waitImport(h, ws.apiKey, imported.json().id)).status, 'completed', 'the mailbox import settles');
    const planned = await h.request(ws.apiKey, 'POST', '/imports', {
      addressId: mailbox.id,
      files: [{ name: 'later.mbox', bytes: 10 }],
    });
    await h.request(ws.apiKey, 'POST', `/imports/${planned.json().id}/cancel`);
    // A provider import of the domains' checklist, settled.
    const fromResend = await h.request(ws.apiKey, 'POST', '/provider-imports', {
      apiKey: RESEND_KEYS.full,
      resources: ['domains'],
    });
    t.equal(fromResend.statusCode, 201, fromResend.body);
    await eventually(
      async () =>
        (await h.request(ws.apiKey, 'GET', `/provider-imports/${fromResend.json().id}`)).json().status === 'completed',
      20_000,
    );
    // An export of the workspace, written.
    const exported = await h.request(ws.apiKey, 'POST', '/exports');
    t.equal(exported.statusCode, 201, exported.body);
    t.equal((await waitExport(h, ws.apiKey, exported.json().id)).status, 'ready', 'the export is written');
    // An upload, a draft naming it, another draft deleted.
    const upload = await h.request(ws.apiKey, 'POST', '/files', Buffer.from('notes'), {
      'content-type': 'text/plain',
      'x-filename': 'notes.txt',
    });
    t.equal(upload.statusCode, 201, 'an upload');
    const drafted = await h.request(ws.apiKey, 'POST', '/drafts', {
      from: mailbox.address,
      subject: 'Later',
      attachments: [{ fileId: upload.json().id }],
    });
    t.equal(drafted.statusCode, 201, 'a draft');
    const binnedDraft = (await h.request(ws.apiKey, 'POST', '/drafts', { from: mailbox.address })).json();
    await h.request(ws.apiKey, 'DELETE', `/drafts/${binnedDraft.id}`);
    // Rules of the mailbox: one that refused a sender (its run kept), one deleted.
    const rule = (name: string, actions: { type: 'reject' | 'label'; value: string | null }[]) => ({
      name,
      description: null,
      enabled: true,
      match: 'all' as const,
      conditions: [
        {
          field: 'envelope_from' as const,
          op: 'equals' as const,
          value: 'spam@outside.test',
          header: null,
          negate: false,
        },
      ],
      actions,
      stopProcessing: false,
    });
    const ruleBox = { address: box.address, addressId: box.addressId, domainId: box.domainId };
    await createRule(
      h.system.commands,
      system,
      { mailbox: ruleBox, rule: rule('Block', [{ type: 'reject', value: null }]) },
      now(),
    );
    const { ruleId: retired } = await createRule(
      h.system.commands,
      system,
      { mailbox: ruleBox, rule: rule('Tag', [{ type: 'label', value: 'archive' }]) },
      now(),
    );
    await deleteRule(h.system.commands, system, retired, now());
    const ports = ruleRunPorts(h.system);
    const spam = arrivingMessage(`spam${w}@outside.test`);
    const evaluation = await evaluateMailbox(
      ports,
      ws.workspaceId,
      box.address,
      factsOf(spam.summary, { mailFrom: 'spam@outside.test', spam: false }),
      now(),
    );
    await recordRejection(
      ports,
      ws.workspaceId,
      box.address,
      evaluation,
      { headerMessageId: spam.summary.messageId, mailFrom: 'spam@outside.test' },
      now(),
    );
    // Tasks: one renamed, run and paused; one deleted (tasks and their runs).
    const task: TaskSettings = {
      name: 'Digest',
      instruction: 'Summarise the day.',
      trigger: {
        kind: 'schedule',
        cadence: 'daily',
        everyHours: 1,
        hour: 8,
        minute: 0,
        weekdays: [1, 2, 3, 4, 5],
        monthDay: 1,
        timezone: 'Europe/Berlin',
      },
      autonomy: 'organize',
      toolkits: ['drafts'],
      model: 'standard',
      notify: 'attention',
      maxRunsPerDay: 50,
      maxSteps: 20,
    };
    const taskInput = { owner: { kind: 'apiKey' as const, id: null }, paused: false, limits: h.system.tasks.limits };
    const { taskId } = await createTask(h.system.commands, system, { ...taskInput, settings: task }, now());
    await updateTask(h.system.commands, system, taskId, { ...task, name: 'Weekday digest' }, now());
    const { name: _, trigger: __, maxRunsPerDay: ___, ...runSettings } = task;
    const runId = newId.taskRun();
    await queueTaskRun(
      h.system.commands,
      system,
      {
        runId,
        taskId,
        source: 'manual',
        slot: null,
        messageId: null,
        maxRunsPerDay: 50,
        settings: { ...runSettings, owner: taskInput.owner },
      },
      now(),
    );
    // The run worked as the assistant works one: a read made, a write waiting for an approval.
    const run = { runId, taskId };
    const read = { id: 'call_1', name: 'list_threads', arguments: '{}' };
    const write = { id: 'call_2', name: 'file_thread', arguments: '{"threadId":"thr_1","label":"archive"}' };
    await startRun(h.system.commands, system, run);
    await takeTurn(h.system.commands, system, run, { afterStep: 0, actions: 1, content: null, toolCalls: [read] });
    await finishToolCall(h.system.commands, system, run, { callId: 'call_1', write: false, result: '[]', error: null });
    await takeTurn(h.system.commands, system, run, {
      afterStep: 2,
      actions: 1,
      content: 'Filing.',
      toolCalls: [write],
    });
    await requestApproval(h.system.commands, system, run, 'call_2');
    await pauseTask(h.system.commands, system, taskId, now());
    const { taskId: goneTask } = await createTask(h.system.commands, system, { ...taskInput, settings: task }, now());
    await deleteTask(h.system.commands, system, goneTask, now());
    // A lane paused as the guard pauses it, and in one workspace of two resumed.
    await pauseStream(
      h.system.commands,
      { workspaceId: ws.workspaceId, kind: 'system', id: null },
      { stream: 'broadcast', reason: 'bounce_rate', rate: 0.1, counts: { sent: 100, bounced: 10, complained: 0 } },
      new Date().toISOString(),
    );
    if (w % 2 === 0) await h.request(ws.apiKey, 'POST', '/sending/streams/broadcast/resume');
  }
  // A person signs in, turns two-factor on, spends a backup code and signs out (accounts).
  const ports = h.system.accounts.ports;
  const stamp = () => new Date().toISOString();
  const signIn = async () => {
    const asked = await askSignInCode(ports, 'owner1@example.com', stamp());
    if (!('challengeId' in asked)) throw new Error('throttled');
    const id = asked.challengeId;
    return { id, answered: await answerSignInCode(h.system.commands, ports, id, ports.codes.signInCode(id), stamp()) };
  };
  await signIn();
  const person = { userId: (await ports.findAccount('owner1@example.com'))!.userId, email: 'owner1@example.com' };
  const { secret } = await startTwoFactorSetup(ports, person);
  const backupCodes = await confirmTwoFactor(h.system.commands, ports, person, await generate({ secret }), stamp());
  const second = await signIn();
  t.equal(second.answered.outcome, 'second_factor');
  const signedIn = await answerSecondFactor(h.system.commands, ports, second.id, backupCodes[0]!, stamp());
  if (signedIn.outcome !== 'signed_in') throw new Error(signedIn.outcome);
  await signOut(h.system.commands, { ...person, sessionId: ports.codes.sessionIdOf(signedIn.token)! }, stamp());

  const { db, pool } = h.system.database;
  for (const projector of h.system.runner.projectors) {
    const schema = `compare_${projector.name.replace(/\W/g, '_')}`;
    await rebuildProjection(db, pool, h.system.store, h.system.runner, projector, { swap: false, schema });
    for (const table of projector.tables) {
      t.ok((await rows(h, 'public', table)).length > 0, `${table} has rows to compare`);
      t.same(
        await rows(h, schema, table),
        await rows(h, 'public', table),
        `${projector.name}.${table} rebuilt equals live`,
      );
    }
    await pool.query(`DROP SCHEMA ${schema} CASCADE`);
  }

  const apiKeys = h.system.runner.projectors.find((p) => p.name === 'api_keys')!;
  const before = await rows(h, 'public', 'api_keys');
  // Writes and reads go on during the rebuild and swap.
  const owner = keys[0]!.owner;
  let answered = 0;
  let failed = 0;
  let stop = false;
  const traffic = (async () => {
    while (!stop) {
      const res = await h.request(owner, 'GET', '/keys?limit=5');
      if (res.statusCode === 200) answered++;
      else failed++;
    }
  })();
  const result = await rebuildProjection(db, pool, h.system.store, h.system.runner, apiKeys);
  const created = (await h.request(owner, 'POST', '/keys', { scopes: [], name: 'after-swap' })).json();
  stop = true;
  await traffic;
  t.ok(answered > 0, `the server kept answering (${answered} reads)`);
  t.equal(failed, 0);
  t.ok(result.events >= 20);
  const after = await rows(h, 'public', 'api_keys');
  t.same(
    after.filter((r) => !r.includes(created.id)),
    before,
    'swapped table holds what the live one held',
  );
  t.equal(
    (await h.request(owner, 'GET', `/keys/${created.id}`)).statusCode,
    200,
    'the live projector goes on writing into the swapped table',
  );
  const status = await h.system.runner.status();
  t.equal(status.find((s) => s.name === 'api_keys')!.lag, 0, 'after the swap the live checkpoint reaches the head');
});
