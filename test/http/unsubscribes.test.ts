import t from 'tap';
import { sendEmail } from '../../commands/emails/handlers.ts';
import { eventually, startReceiver } from '../support/receiver.ts';
import { startSendingApp, storedMessage } from '../support/emails.ts';

const ONE_CLICK = 'List-Unsubscribe=One-Click';
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

t.test('unsubscribes', async (t) => {
  const { h, setUp, keyWith } = await startSendingApp(t, {
    automations: { minuteMs: 100, pollMs: 20 },
    webhooks: { allowPrivate: true, retryScheduleMs: [50, 50, 50], pollMs: 20 },
  });
  const { ws } = await setUp('example.com');
  const other = await setUp('example.net');
  const pub = (method: 'GET' | 'POST', token: string, payload?: string, headers: Record<string, string> = FORM) =>
    h.app.inject({ method, url: `/unsubscribe/${token}`, ...(payload === undefined ? {} : { payload, headers }) });
  const list = async (key: string, query = '') =>
    (await h.request(key, 'GET', `/suppressions/unsubscribes${query}`)).json();
  // A broadcast-lane send as automations make it: through sendEmail with the source `automation`.
  const broadcastSend = (workspaceId: string, to: string) =>
    sendEmail(
      { commands: h.system.commands, sending: h.system.sending },
      {
        actor: { workspaceId, kind: 'system', id: null },
        mode: 'live',
        reach: null,
        source: 'automation',
      },
      { from: `a@${workspaceId === ws.workspaceId ? 'example.com' : 'example.net'}`, to, subject: 'News', text: 'Hi' },
      new Date(),
    );

  await t.test('an automation send carries List-Unsubscribe and one-click; one click unsubscribes', async (t) => {
    t.equal(
      (
        await h.request(ws.apiKey, 'POST', '/templates', {
          name: 'Letter',
          publish: true,
          subject: 'Hello',
          document: { body: [{ kind: 'Text', text: 'Hi.' }] },
        })
      ).statusCode,
      201,
    );
    const automation = await h.request(ws.apiKey, 'POST', '/automations', {
      name: 'Welcome',
      trigger: { event: 'joined', filters: [] },
      steps: [{ type: 'send', template: 'letter', from: 'a@example.com' }],
    });
    t.equal(automation.statusCode, 201, automation.body);
    const event = await h.request(ws.apiKey, 'POST', '/events', {
      name: 'joined',
      email: 'cy@example.org',
      createContact: true,
    });
    t.equal(event.statusCode, 201, event.body);
    const sendsOf = async () =>
      (await h.request(ws.apiKey, 'GET', `/automations/${automation.json().id}/sends`)).json().data as any[];
    await eventually(async () => (await sendsOf())[0]?.status === 'sent');
    const parsed = await storedMessage(h, (await sendsOf())[0].emailId, ws.workspaceId);
    const line = (key: string) => (parsed.headerLines.find((l) => l.key === key)?.line ?? '').replace(/\r?\n\s*/g, '');
    t.equal(line('list-unsubscribe-post'), `List-Unsubscribe-Post: ${ONE_CLICK}`);
    const raw = line('list-unsubscribe');
    const url = /<(https:\/\/localhost\/unsubscribe\/([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+))>/.exec(raw);
    t.ok(url, raw);
    const token = url![2]!;

    const page = await pub('GET', token);
    t.equal(page.statusCode, 200);
    t.match(page.body, 'cy@example.org');
    t.match(page.body, 'Unsubscribe from everything');
    t.same(
      await list(ws.apiKey),
      { object: 'list', data: [], hasMore: false, nextCursor: null },
      'opening changes nothing',
    );

    // Altered MAC, altered payload under the old MAC, and a payload naming someone else: none is ours.
    const [payload, mac] = token.split('.') as [string, string];
    const flipped = `${payload}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`;
    const forged = Buffer.from(`${ws.workspaceId}\nzed@example.org\n`).toString('base64url');
    for (const bad of [flipped, `${forged}.${mac}`, payload, `${token}.x`, 'nothing']) {
      t.equal((await pub('POST', bad, ONE_CLICK)).statusCode, 404, bad);
      t.equal((await pub('GET', bad)).statusCode, 404, bad);
    }

    const receiver = await startReceiver(t);
    const hook = await h.request(ws.apiKey, 'POST', '/webhooks', {
      url: `${receiver.url}/hook`,
      eventTypes: ['contact.unsubscribed'],
    });
    t.equal(hook.statusCode, 201, hook.body);
    const click = await pub('POST', token, ONE_CLICK);
    t.equal(click.statusCode, 200);
    t.equal(click.body, '');
    const again = await pub('POST', token, ONE_CLICK);
    t.equal(again.statusCode, 200, 'a second click is a repeat');
    const [entry, ...more] = (await list(ws.apiKey)).data;
    t.same(more, []);
    t.match(entry, {
      object: 'unsubscribe',
      id: /^uns_[0-9a-f]{24}$/,
      email: 'cy@example.org',
      contactId: /^con_/,
      audienceId: null,
      source: 'one-click',
      removable: false,
    });

    const delivered = await eventually(async () => receiver.received.find((r) => r.path === '/hook'));
    t.match(JSON.parse(delivered.body), {
      type: 'contact.unsubscribed',
      data: {
        id: entry.id,
        email: 'cy@example.org',
        contactId: entry.contactId,
        audienceId: null,
        source: 'one-click',
      },
    });

    const removal = await h.request(ws.apiKey, 'DELETE', `/suppressions/unsubscribes/${entry.id}`);
    t.equal(removal.statusCode, 409);
    t.equal(removal.json().error.code, 'unsubscribe_not_removable');
    const foreign = await h.request(other.ws.apiKey, 'DELETE', `/suppressions/unsubscribes/${entry.id}`);
    t.equal(foreign.statusCode, 404, 'a foreign workspace does not see it');
    t.same((await list(other.ws.apiKey)).data, []);

    // Later broadcast-lane mail to the address is dropped; transactional mail still goes.
    const later = await broadcastSend(ws.workspaceId, 'Cy <CY@example.org>');
    t.match(later.email.recipients, [{ email: 'CY@example.org', status: 'suppressed', reason: 'unsubscribe' }]);
    const receipt = await h.request(ws.apiKey, 'POST', '/emails', {
      from: 'a@example.com',
      to: 'cy@example.org',
      subject: 'Receipt',
      text: 'Paid.',
    });
    t.equal(receipt.statusCode, 201, receipt.body);
    // The answer at acceptance: a later read may already show it delivered.
    t.match(receipt.json(), { stream: 'transactional', recipients: [{ status: 'queued' }] });
    const plain = await storedMessage(h, receipt.json().id, ws.workspaceId);
    t.notOk(plain.headers.has('list-unsubscribe'), 'transactional mail has no unsubscribe link');
    // The other workspace's mail to the same address goes.
    const elsewhere = await broadcastSend(other.ws.workspaceId, 'cy@example.org');
    t.match(elsewhere.email.recipients, [{ status: 'queued' }]);
  });

  await t.test('the preferences page: leave and rejoin an audience, leave everything', async (t) => {
    const shown = (
      await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Weekly', showOnPreferences: true })
    ).json();
    const hidden = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Internal' })).json();
    const token = await h.system.sending.unsubscribeLinks.token({
      partition: ws.workspaceId,
      email: 'di@example.org',
      audienceId: null,
    });
    const contact = await h.request(ws.apiKey, 'POST', '/contacts', {
      email: 'di@example.org',
      audienceIds: [shown.id],
    });
    t.equal(contact.statusCode, 201, contact.body);
    const audiencesOfDi = async () =>
      (await h.request(ws.apiKey, 'GET', '/contacts/di@example.org')).json().audienceIds as string[];
    const page = await pub('GET', token);
    t.match(page.body, 'Leave Weekly');
    t.notMatch(page.body, 'Internal');
    const post = (audience: string, action: string) =>
      pub('POST', token, new URLSearchParams({ audience, action }).toString());
    t.equal((await post(hidden.id, 'leave')).statusCode, 404, 'an audience not on the page cannot be left here');
    t.equal((await post(shown.id, 'stay')).statusCode, 400);
    const left = await post(shown.id, 'leave');
    t.equal(left.statusCode, 200);
    t.match(left.body, 'Rejoin Weekly');
    t.match((await list(ws.apiKey, '?email=di@example.org')).data, [
      { audienceId: shown.id, source: 'preferences', contactId: contact.json().id },
    ]);
    t.notOk((await audiencesOfDi()).includes(shown.id), 'leaving takes the contact out of the audience');
    t.match((await post(shown.id, 'rejoin')).body, 'Leave Weekly');
    t.same((await list(ws.apiKey, '?email=di@example.org')).data, []);
    t.ok((await audiencesOfDi()).includes(shown.id), 'rejoining puts it back');
    t.match((await post('all', 'leave')).body, 'Subscribe again');
    t.match((await list(ws.apiKey, '?audienceId=all&source=preferences')).data, [{ email: 'di@example.org' }]);
  });

  await t.test('one-click as multipart; a test-mode link acts on test data only', async (t) => {
    const token = await h.system.sending.unsubscribeLinks.token({
      partition: `${ws.workspaceId}.test`,
      email: 'fi@example.org',
      audienceId: null,
    });
    const boundary = 'xYzZY';
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`;
    const click = await pub('POST', token, body, { 'content-type': `multipart/form-data; boundary=${boundary}` });
    t.equal(click.statusCode, 200, click.body);
    t.same((await list(ws.apiKey, '?email=fi@example.org')).data, [], 'live data untouched');
    const testKey = await keyWith(ws, { scopes: ['settings:read'], mode: 'test' });
    t.match((await list(testKey, '?email=fi@example.org')).data, [{ source: 'one-click', audienceId: null }]);
  });

  await t.test('an audience-scoped link: one click leaves that audience only', async (t) => {
    const monthly = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Monthly' })).json();
    t.equal(
      (await h.request(ws.apiKey, 'POST', '/contacts', { email: 'gi@example.org', audienceIds: [monthly.id] }))
        .statusCode,
      201,
    );
    const token = await h.system.sending.unsubscribeLinks.token({
      partition: ws.workspaceId,
      email: 'gi@example.org',
      audienceId: monthly.id,
    });
    t.equal((await pub('POST', token, ONE_CLICK)).statusCode, 200);
    t.match((await list(ws.apiKey, '?email=gi@example.org')).data, [{ audienceId: monthly.id, source: 'one-click' }]);
    t.same((await list(ws.apiKey, `?audienceId=${monthly.id}`)).data.length, 1);
    const gi = (await h.request(ws.apiKey, 'GET', '/contacts/gi@example.org')).json();
    t.notOk(gi.audienceIds.includes(monthly.id), 'the contact left the audience');
    const still = await broadcastSend(ws.workspaceId, 'gi@example.org');
    t.match(still.email.recipients, [{ status: 'queued' }], 'leaving one audience is not leaving everything');
  });

  await t.test('recorded through the API: removable; paging with rows added between pages', async (t) => {
    const created = await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: ' Ed@Example.org ' });
    t.equal(created.statusCode, 201, created.body);
    t.match(created.json(), { email: 'ed@example.org', source: 'api', removable: true, audienceId: null });
    const repeat = await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: 'ed@example.org' });
    t.equal(repeat.statusCode, 200);
    t.equal(repeat.json().id, created.json().id);
    const unknown = await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', {
      email: 'ed@example.org',
      audienceId: 'aud_000000000000000000000000',
    });
    t.equal(unknown.statusCode, 404);
    t.equal(unknown.json().error.code, 'audience_not_found');
    const bad = await h.request(ws.apiKey, 'POST', '/suppressions/unsubscribes', { email: 'not an address' });
    t.equal(bad.statusCode, 422);
    t.equal((await h.request(ws.apiKey, 'DELETE', `/suppressions/unsubscribes/${created.json().id}`)).statusCode, 200);
    t.equal((await h.request(ws.apiKey, 'DELETE', `/suppressions/unsubscribes/${created.json().id}`)).statusCode, 404);
    t.equal((await h.request(ws.apiKey, 'DELETE', '/suppressions/unsubscribes/nope')).statusCode, 404);

    const add = async (email: string) =>
      t.equal((await h.request(other.ws.apiKey, 'POST', '/suppressions/unsubscribes', { email })).statusCode, 201);
    for (const i of [1, 2, 3]) await add(`p${i}@example.org`);
    const first = await list(other.ws.apiKey, '?limit=2');
    t.same(
      first.data.map((u: any) => u.email),
      ['p3@example.org', 'p2@example.org'],
    );
    t.equal(first.hasMore, true);
    await add('p4@example.org');
    const second = await list(other.ws.apiKey, `?limit=2&cursor=${encodeURIComponent(first.nextCursor)}`);
    t.same(
      second.data.map((u: any) => u.email),
      ['p1@example.org'],
      'a row added between pages is not on a later page',
    );
    t.equal(second.hasMore, false);
    t.same((await list(ws.apiKey, '?source=api')).data, [], 'the other workspace’s rows stay its own');
    t.equal((await h.request(other.ws.apiKey, 'GET', '/suppressions/unsubscribes?limit=100')).statusCode, 200);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/suppressions/unsubscribes?limit=101')).statusCode, 422);
    t.equal((await h.request(other.ws.apiKey, 'GET', '/suppressions/unsubscribes?sort=new')).statusCode, 422);
    const narrowed = await keyWith(other.ws, {
      scopes: ['settings:write', 'settings:read'],
      domainAllowlist: ['example.net'],
    });
    const refused = await h.request(narrowed, 'POST', '/suppressions/unsubscribes', { email: 'p9@example.org' });
    t.equal(refused.statusCode, 422);
    t.equal(refused.json().error.code, 'capability_unsupported');
    t.equal((await list(narrowed)).data.length, 4, 'narrowed keys read the list');
  });
});
