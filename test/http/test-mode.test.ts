import t from 'tap';
import { printHistory } from '../../cli/history.ts';
import { eventually, startReceiver } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

async function created(h: TestApp, key: string, path: string, body: object) {
  const res = await h.request(key, 'POST', path, body);
  if (res.statusCode !== 201) throw new Error(`POST ${path}: ${res.statusCode} ${res.body}`);
  return res.json();
}

const ids = async (h: TestApp, key: string, path: string) =>
  (await h.request(key, 'GET', path)).json().data.map((r: { id: string }) => r.id);

/**
 * Test mode is a partition of its own: a test key sees and changes only test-mode contacts,
 * audiences, contact events, suppressions, webhook endpoints and automations, its changes reach
 * only test-mode endpoints, and a live key never sees any of it. Configuration both modes share
 * (roles, templates) a test key reads but does not change; keys it manages only inside its authority.
 */
t.test('test mode: a partition of its own for every resource sends and events act on', async (t) => {
  const smtp = await startSmtpServer(t);
  const h = await startTestApp(t, {
    smtpUrl: smtp.url,
    webhooks: { allowPrivate: true, pollMs: 20 },
    webhookNotices: { pollMs: 20 },
  });
  const ws = await h.workspace();
  const live = ws.apiKey;
  const every = (await h.request(live, 'GET', '/ping')).json().scopes;
  const test = (await created(h, live, '/keys', { scopes: every, mode: 'test' })).token;
  const liveHooks = await startReceiver(t);
  const testHooks = await startReceiver(t);
  const gone = await startReceiver(t, () => ({ status: 410 }));
  const subscribed = { eventTypes: ['contact.*', 'suppression.*'] };
  const liveEndpoint = await created(h, live, '/webhooks', { url: liveHooks.url, ...subscribed });
  const testEndpoint = await created(h, test, '/webhooks', { url: testHooks.url, ...subscribed });

  t.test('contacts and audiences: two books', async (t) => {
    const mine = await created(h, test, '/contacts', { email: 'ann@example.com', name: 'Test Ann' });
    t.same(
      errorOf(await h.request(live, 'GET', '/contacts/ann@example.com')),
      [404, 'contact_not_found', 'email'],
      'a live key never sees test contacts',
    );
    t.same(errorOf(await h.request(live, 'GET', `/contacts/${mine.id}`)), [404, 'contact_not_found', 'email']);
    const theirs = await created(h, live, '/contacts', { email: 'ann@example.com', name: 'Live Ann' });
    t.not(theirs.id, mine.id, 'the same address is a contact in each book');
    t.equal((await h.request(test, 'GET', '/contacts/ann@example.com')).json().name, 'Test Ann');
    t.same(await ids(h, test, '/contacts'), [mine.id]);
    t.same(await ids(h, live, '/contacts'), [theirs.id]);
    t.same(
      errorOf(await h.request(test, 'DELETE', `/contacts/${theirs.id}`)),
      [404, 'contact_not_found', 'email'],
      'nor changes live ones',
    );

    const audience = await created(h, test, '/audiences', { name: 'Testers' });
    t.same(errorOf(await h.request(live, 'GET', `/audiences/${audience.id}`)), [404, 'audience_not_found', 'id']);
    const [testDefault] = await ids(h, test, '/audiences?limit=1');
    const [liveDefault] = await ids(h, live, '/audiences?limit=1');
    t.not(testDefault, liveDefault, 'each book has its own default audience');
    t.notOk((await ids(h, live, '/audiences?limit=100')).includes(audience.id));
    t.same(errorOf(await h.request(test, 'PUT', `/audiences/${liveDefault}/contacts/ann@example.com`)), [
      404,
      'audience_not_found',
      'id',
    ]);
  });

  t.test('contact events: stored in the test book, mode test, starting nothing; names apart', async (t) => {
    const automation = await created(h, test, '/automations', {
      name: 'Test flow',
      trigger: { event: 'test_only' },
      steps: [{ type: 'send', template: 'x' }],
    });
    t.same(errorOf(await h.request(live, 'GET', `/automations/${automation.id}`)), [404, 'resource_not_found', 'id']);
    t.notOk((await ids(h, live, '/automations')).includes(automation.id));
    const sent = await h.request(test, 'POST', '/events', { name: 'test_only', email: 'ann@example.com' });
    t.match(sent.json(), { mode: 'test', enrolled: [], resumed: 0 });
    t.same(
      (await h.request(live, 'GET', '/contacts/ann@example.com/events')).json().data,
      [],
      "the live contact has none of the test book's events",
    );
    t.same((await h.request(live, 'GET', '/events/names')).json().data, []);
    t.same(
      (await h.request(test, 'GET', '/events/names')).json().data.map((n: { name: string }) => n.name),
      ['test_only'],
    );
    t.same(
      await ids(h, test, `/automations/${automation.id}/runs`),
      [],
      'test-key events start nothing, in either mode',
    );
    const cursor = (await h.request(test, 'GET', '/contacts/ann@example.com/events?limit=1')).json().data[0].id;
    t.same(
      (await h.request(live, 'GET', `/contacts/ann@example.com/events?cursor=${cursor}`)).json(),
      { object: 'list', data: [], hasMore: false, nextCursor: null },
      "a test event's id as a live cursor tells nothing",
    );
  });

  t.test('suppressions: two lists', async (t) => {
    const mine = await created(h, test, '/suppressions', { email: 'bounce@example.com' });
    t.same(errorOf(await h.request(live, 'GET', `/suppressions/${mine.id}`)), [404, 'resource_not_found', 'id']);
    t.same(await ids(h, live, '/suppressions'), []);
    const theirs = await h.request(live, 'POST', '/suppressions', { email: 'bounce@example.com' });
    t.equal(theirs.statusCode, 201, 'the live list does not hold the test entry');
    t.same(await ids(h, test, '/suppressions'), [mine.id]);
  });

  t.test('webhooks: test-mode changes reach only test-mode endpoints, and the other way round', async (t) => {
    t.same(await ids(h, live, '/webhooks'), [liveEndpoint.id]);
    t.same(await ids(h, test, '/webhooks'), [testEndpoint.id]);
    t.same(errorOf(await h.request(test, 'GET', `/webhooks/${liveEndpoint.id}`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(test, 'POST', `/webhooks/${liveEndpoint.id}/test`)), [
      404,
      'resource_not_found',
      'id',
    ]);
    const heard = (r: { received: { body: string }[] }) =>
      r.received
        .map((m) => JSON.parse(m.body))
        .filter((m) => m.type !== 'webhook.test')
        .map((m) => `${m.type} ${m.data.email}`)
        .sort();
    await eventually(async () => heard(liveHooks).length >= 2 && heard(testHooks).length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    t.same(heard(testHooks), ['contact.created ann@example.com', 'suppression.added bounce@example.com']);
    t.same(heard(liveHooks), ['contact.created ann@example.com', 'suppression.added bounce@example.com']);
    const names = (r: { received: { body: string }[] }) =>
      r.received.map((m) => JSON.parse(m.body).data.name).filter(Boolean);
    t.same(
      [names(testHooks), names(liveHooks)],
      [['Test Ann'], ['Live Ann']],
      "each endpoint heard its own mode's contact",
    );

    const off = await created(h, test, '/webhooks', { url: gone.url, eventTypes: ['contact.*'] });
    await created(h, test, '/contacts', { email: 'gone@example.com' });
    const mail = await eventually(async () => smtp.mails[0]);
    t.same(mail.to, ['owner1@example.com'], 'a test-mode endpoint switched off is mailed to the workspace');
    t.match(mail.subject, /test-mode webhook endpoint/);
    t.match(mail.text, new RegExp(off.id));
  });

  t.test('configuration both modes share: read by test keys, changed only by live ones', async (t) => {
    t.equal((await h.request(test, 'GET', '/roles')).statusCode, 200);
    const [role] = (await h.request(test, 'GET', '/roles')).json().data;
    t.same(errorOf(await h.request(test, 'POST', '/roles', { name: 'Testers', permissions: [] })), [
      403,
      'beyond_caller_authority',
      null,
    ]);
    t.same(errorOf(await h.request(test, 'PATCH', `/roles/${role.id}`, { name: 'x' })), [
      403,
      'beyond_caller_authority',
      null,
    ]);
    const template = await created(h, live, '/templates', {
      name: 'Welcome',
      engine: 'html',
      subject: 'Hi',
      html: '<p>Hi</p>',
      publish: true,
    });
    t.equal((await h.request(test, 'GET', `/templates/${template.id}`)).statusCode, 200);
    t.same(
      errorOf(
        await h.request(test, 'POST', '/templates', { name: 'Mine', engine: 'html', subject: 'Hi', html: '<p>Hi</p>' }),
      ),
      [403, 'beyond_caller_authority', null],
    );
    t.same(errorOf(await h.request(test, 'PATCH', `/templates/${template.id}`, { subject: 'Changed' })), [
      403,
      'beyond_caller_authority',
      null,
    ]);
    t.same(errorOf(await h.request(test, 'DELETE', `/templates/${template.id}`)), [
      403,
      'beyond_caller_authority',
      null,
    ]);
    t.equal(
      (await h.request(test, 'POST', `/templates/${template.id}/render`, {})).statusCode,
      200,
      'rendering changes nothing: allowed',
    );
    t.equal((await h.request(live, 'GET', `/templates/${template.id}`)).json().subject, 'Hi', 'unchanged');
    const testKey = await created(h, test, '/keys', { scopes: ['contacts:read'] });
    t.match(testKey.token, /^wms_test_/, 'test keys manage test keys');
    t.equal((await h.request(test, 'DELETE', `/keys/${testKey.id}`)).statusCode, 200);
  });

  t.test('the audit replay shows both modes, and either alone', async (t) => {
    const lines: any[] = [];
    await printHistory(h.system, { workspaceId: ws.workspaceId, type: 'ContactCreated' }, (l) =>
      lines.push(JSON.parse(l)),
    );
    t.same(
      lines.map((e) => [e.streamId, e.metadata.workspaceId]),
      [
        [`ws-${ws.workspaceId}.test.contact-ann@example.com`, `${ws.workspaceId}.test`],
        [`ws-${ws.workspaceId}.contact-ann@example.com`, ws.workspaceId],
        [`ws-${ws.workspaceId}.test.contact-gone@example.com`, `${ws.workspaceId}.test`],
      ],
    );
    const testOnly: any[] = [];
    await printHistory(h.system, { workspaceId: `${ws.workspaceId}.test`, type: 'ContactCreated' }, (l) =>
      testOnly.push(JSON.parse(l)),
    );
    t.equal(testOnly.length, 2);
  });
});
