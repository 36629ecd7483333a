import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { openSystem } from '../../system.ts';
import { eventually, startReceiver } from '../support/receiver.ts';
import { startSmtpServer } from '../support/smtp.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

// A loaded CI machine once took over two seconds to answer a good delivery, so only the timeout test
// runs on a short timeout, and it holds its answer far longer than that.
const FAST = { allowPrivate: true, retryScheduleMs: [50, 50, 50], timeoutMs: 15_000, pollMs: 20 };
const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

async function keyWith(h: TestApp, ownerKey: string, body: object): Promise<string> {
  const res = await h.request(ownerKey, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

async function endpoint(h: TestApp, key: string, body: object) {
  const res = await h.request(key, 'POST', '/webhooks', body);
  if (res.statusCode !== 201) throw new Error(`endpoint not created: ${res.statusCode} ${res.body}`);
  return res.json();
}

const deliveries = async (h: TestApp, key: string, id: string) =>
  (await h.request(key, 'GET', `/webhooks/${id}/deliveries?limit=100`)).json().data;

/**
 * One app for the tests on FAST: each makes a workspace and a receiver of its own, and deliveries
 * and their logs are per endpoint, so they cannot see each other's. Tests on other settings have
 * apps of their own.
 */
const h = await startTestApp(t, { webhooks: FAST });

t.test('create, read, list, update, delete; the secret only at create', async (t) => {
  const ws = await h.workspace();
  const created = await h.request(ws.apiKey, 'POST', '/webhooks', {
    url: 'http://127.0.0.1:9/hook',
    description: 'main',
  });
  t.equal(created.statusCode, 201);
  const e = created.json();
  t.match(e, {
    object: 'webhook_endpoint',
    url: 'http://127.0.0.1:9/hook',
    description: 'main',
    eventTypes: ['*'],
    enabled: true,
    disabledAt: null,
    disabledReason: null,
    consecutiveFailures: 0,
    addressAllowlist: null,
    domainAllowlist: null,
    lastDeliveryAt: null,
    previousSecretExpiresAt: null,
  });
  t.match(e.id, /^whe_[0-9a-f]{24}$/);
  t.match(e.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
  const read = await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}`);
  const { secret: _s, ...withoutSecret } = e;
  t.same(read.json(), withoutSecret, 'a read shows everything but the secret');
  t.notOk(
    JSON.stringify((await h.request(ws.apiKey, 'GET', '/webhooks')).json()).includes(e.secret),
    'the list never shows it',
  );

  const second = await endpoint(h, ws.apiKey, { url: 'http://127.0.0.1:9/two', eventTypes: ['suppression.*'] });
  const page1 = (await h.request(ws.apiKey, 'GET', '/webhooks?limit=1')).json();
  t.same([page1.data[0].id, page1.hasMore], [second.id, true], 'newest first');
  await endpoint(h, ws.apiKey, { url: 'http://127.0.0.1:9/three' });
  const page2 = (await h.request(ws.apiKey, 'GET', `/webhooks?limit=1&cursor=${page1.nextCursor}`)).json();
  t.same(
    page2.data.map((r: { id: string }) => r.id),
    [e.id],
    'a row added between pages does not shift the walk',
  );

  const updated = await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, {
    description: null,
    eventTypes: ['suppression.added', 'email.*'],
    domainAllowlist: ['Example.com'],
  });
  t.match(updated.json(), {
    description: null,
    eventTypes: ['suppression.added', 'email.*'],
    domainAllowlist: ['example.com'],
    url: 'http://127.0.0.1:9/hook',
  });
  t.same(
    (await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, { eventTypes: [] })).json().eventTypes,
    ['*'],
    'empty means the default set',
  );

  t.same((await h.request(ws.apiKey, 'DELETE', `/webhooks/${e.id}`)).json(), {
    object: 'webhook_endpoint',
    id: e.id,
    deleted: true,
  });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}`)), [404, 'resource_not_found', 'id']);
});

t.test('validation, the 10-endpoint limit, foreign ids, scopes and narrowed keys', async (t) => {
  const ws = await h.workspace();
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/webhooks', {})), [422, 'invalid_parameter', 'url']);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'not a url' })), [
    422,
    'invalid_parameter',
    'url',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'ftp://example.com/x' })), [
    422,
    'invalid_parameter',
    'url',
  ]);
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://example.com', eventTypes: ['nonsense.thing'] }),
    ),
    [422, 'invalid_parameter', 'eventTypes.0'],
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://example.com', colour: 1 })), [
    422,
    'unknown_parameter',
    'colour',
  ]);
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://example.com', description: 'd'.repeat(501) }),
    ),
    [422, 'invalid_parameter', 'description'],
  );
  const ids = [];
  for (let i = 0; i < 10; i++) ids.push((await endpoint(h, ws.apiKey, { url: `http://127.0.0.1:9/${i}` })).id);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://example.com/11' })), [
    422,
    'workspace_limit_reached',
    null,
  ]);
  await h.request(ws.apiKey, 'DELETE', `/webhooks/${ids[0]}`);
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://example.com/11' })).statusCode,
    201,
    'deleting frees a place',
  );

  const other = await h.workspace();
  const testDelivery = async (id: string) =>
    (await h.request(ws.apiKey, 'POST', `/webhooks/${id}/test`)).json().id as string;
  const d1 = await testDelivery(ids[1]!);
  const since = { since: new Date(0).toISOString() };
  for (const [method, path, body] of [
    ['GET', ''],
    ['PATCH', '', { description: 'x' }],
    ['DELETE', ''],
    ['POST', '/rotate-secret'],
    ['POST', '/test'],
    ['GET', '/deliveries'],
    ['GET', '/audit'],
    ['GET', '/stats'],
    ['POST', '/replay', since],
    ['GET', `/deliveries/${d1}`],
    ['POST', `/deliveries/${d1}/replay`],
  ] as const) {
    const res = await h.request(other.apiKey, method, `/webhooks/${ids[1]}${path}`, body);
    t.same(errorOf(res), [404, 'resource_not_found', 'id'], `${method} ${path} of another workspace`);
  }
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/webhooks/whe_nope')), [404, 'resource_not_found', 'id']);

  const reader = await keyWith(h, ws.apiKey, { scopes: ['webhooks:read'] });
  t.equal((await h.request(reader, 'GET', '/webhooks')).statusCode, 200);
  t.same(errorOf(await h.request(reader, 'POST', '/webhooks', { url: 'https://example.com' })), [
    403,
    'insufficient_scope',
    null,
  ]);

  const narrowed = await keyWith(h, ws.apiKey, {
    scopes: ['webhooks:read', 'webhooks:write'],
    domainAllowlist: ['a.test'],
  });
  await h.request(ws.apiKey, 'DELETE', `/webhooks/${ids[2]}`);
  t.same(
    errorOf(await h.request(narrowed, 'POST', '/webhooks', { url: 'https://example.com/n' })),
    [422, 'capability_unsupported', 'addressAllowlist'],
    'an unrestricted endpoint is wider',
  );
  t.same(
    errorOf(
      await h.request(narrowed, 'POST', '/webhooks', { url: 'https://example.com/n', domainAllowlist: ['b.test'] }),
    ),
    [422, 'capability_unsupported', 'addressAllowlist'],
    'the spec names addressAllowlist, whichever list is wider',
  );
  const inside = await h.request(narrowed, 'POST', '/webhooks', {
    url: 'http://127.0.0.1:9/n',
    domainAllowlist: ['a.test'],
    addressAllowlist: ['x@a.test'],
  });
  t.equal(inside.statusCode, 201, 'inside its own lists');
  t.same(inside.json().addressAllowlist, [], 'an address on an allowlisted domain is dropped');
  const wide = ids[3]!;
  const d3 = await testDelivery(wide);
  for (const [method, path, body] of [
    ['PATCH', '', { description: 'x' }],
    ['POST', '/test'],
    ['POST', '/replay', since],
    ['POST', `/deliveries/${d3}/replay`],
  ] as const) {
    t.same(
      errorOf(await h.request(narrowed, method, `/webhooks/${wide}${path}`, body)),
      [422, 'capability_unsupported', 'addressAllowlist'],
      `nor ${method} ${path} of a wider one`,
    );
  }
  const own = await h.request(narrowed, 'POST', `/webhooks/${inside.json().id}/test`);
  t.equal(own.statusCode, 202, 'a test of its own endpoint');
  t.equal(
    (await h.request(narrowed, 'POST', `/webhooks/${inside.json().id}/deliveries/${own.json().id}/replay`)).statusCode,
    202,
  );
  t.equal((await h.request(narrowed, 'POST', `/webhooks/${inside.json().id}/replay`, since)).statusCode, 202);
});

t.test('production refuses http:// and private receivers', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  for (const url of [
    'http://example.com/hook',
    'https://127.0.0.1/hook',
    'https://10.1.2.3/x',
    'https://169.254.169.254/latest',
    'https://localhost/x',
    'https://[::1]/x',
  ]) {
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/webhooks', { url })), [422, 'invalid_parameter', 'url'], url);
  }
  t.equal((await h.request(ws.apiKey, 'POST', '/webhooks', { url: 'https://hooks.example.com/x' })).statusCode, 201);
});

t.test('delivery: signed per Standard Webhooks, logged, subscriptions and allowlists narrow', async (t) => {
  const ws = await h.workspace();
  const receiver = await startReceiver(t);
  const all = await endpoint(h, ws.apiKey, { url: `${receiver.url}/family`, eventTypes: ['suppression.*'] });
  const exact = await endpoint(h, ws.apiKey, { url: `${receiver.url}/exact`, eventTypes: ['suppression.added'] });
  await endpoint(h, ws.apiKey, {
    url: `${receiver.url}/narrow`,
    eventTypes: ['suppression.*'],
    domainAllowlist: ['a.test'],
  });
  await endpoint(h, ws.apiKey, { url: `${receiver.url}/default` });

  const added = (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'someone@b.test' })).json();
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'other@a.test' });
  await receiver.waitFor(5);
  await new Promise((r) => setTimeout(r, 200));
  const paths = receiver.received.map((r) => r.path).sort();
  t.same(
    paths,
    ['/exact', '/exact', '/family', '/family', '/narrow'],
    'the default set has no suppression events; the allowlist keeps b.test away',
  );

  const first = receiver.received.find((r) => r.path === '/family' && r.body.includes('someone@b.test'))!;
  const verified = new Webhook(all.secret).verify(first.body, first.headers) as any;
  t.match(verified, { type: 'suppression.added', data: { id: added.id, email: 'someone@b.test', reason: 'manual' } });
  t.match(first.headers['webhook-id'], /^msg_[0-9a-f]{24}$/);
  t.throws(
    () => new Webhook(exact.secret).verify(first.body, first.headers),
    'another endpoint secret does not verify it',
  );

  const log = await eventually(async () => {
    const rows = await deliveries(h, ws.apiKey, all.id);
    return rows.length === 2 && rows.every((d: { status: string }) => d.status === 'delivered') && rows;
  });
  t.match(log[0], {
    object: 'webhook_delivery',
    endpointId: all.id,
    eventType: 'suppression.added',
    status: 'delivered',
    nextAttemptAt: null,
    lastStatusCode: 200,
  });
  t.match(log[0].attempts, [{ attempt: 1, ok: true, statusCode: 200, error: null, responseExcerpt: 'answered 200' }]);
  const endpointNow = (await h.request(ws.apiKey, 'GET', `/webhooks/${all.id}`)).json();
  t.ok(endpointNow.lastDeliveryAt, 'lastDeliveryAt moves');
  t.equal(receiver.received.filter((r) => r.path === '/narrow').length, 1);
});

t.test(
  'contact.* events: a create, update and delete reach the contact family, not the default set; allowlists narrow by address',
  async (t) => {
    const ws = await h.workspace();
    const receiver = await startReceiver(t);
    const family = await endpoint(h, ws.apiKey, { url: `${receiver.url}/family`, eventTypes: ['contact.*'] });
    await endpoint(h, ws.apiKey, { url: `${receiver.url}/deleted`, eventTypes: ['contact.deleted'] });
    await endpoint(h, ws.apiKey, {
      url: `${receiver.url}/narrow`,
      eventTypes: ['contact.*'],
      domainAllowlist: ['a.test'],
    });
    await endpoint(h, ws.apiKey, { url: `${receiver.url}/default` });

    const created = await h.request(ws.apiKey, 'POST', '/contacts', {
      email: ' Ann@B.test ',
      name: 'Ann',
      attributes: { plan: 'pro' },
    });
    t.equal(created.statusCode, 201, created.body);
    const contact = created.json();
    const updated = await h.request(ws.apiKey, 'PATCH', '/contacts/ann@b.test', {
      notes: 'VIP',
      attributes: { seats: '3' },
    });
    t.equal(updated.statusCode, 200, updated.body);
    t.equal((await h.request(ws.apiKey, 'DELETE', '/contacts/ann@b.test')).statusCode, 200);
    t.equal((await h.request(ws.apiKey, 'POST', '/contacts', { email: 'x@a.test' })).statusCode, 201);
    await receiver.waitFor(6);
    await new Promise((r) => setTimeout(r, 200));
    t.same(
      receiver.received.map((r) => r.path).sort(),
      ['/deleted', '/family', '/family', '/family', '/family', '/narrow'],
      'the default set hears no contact event; the allowlist keeps b.test away',
    );

    const heard = (path: string) =>
      receiver.received
        .filter((r) => r.path === path)
        .map((r) => new Webhook(family.secret).verify(r.body, r.headers) as any);
    const ann = heard('/family').filter((m) => m.data.email === 'ann@b.test');
    const byType = Object.fromEntries(ann.map((m) => [m.type, m.data]));
    t.same(byType['contact.created'], {
      id: contact.id,
      email: 'ann@b.test',
      name: 'Ann',
      notes: null,
      attributes: { plan: 'pro' },
      source: 'manual',
      audienceIds: contact.audienceIds,
      createdAt: contact.createdAt,
    });
    t.same(byType['contact.updated'], {
      id: contact.id,
      email: 'ann@b.test',
      name: 'Ann',
      notes: 'VIP',
      attributes: { plan: 'pro', seats: '3' },
      updatedAt: updated.json().updatedAt,
    });
    t.match(byType['contact.deleted'], { id: contact.id, email: 'ann@b.test', deletedAt: String });
    t.same(Object.keys(byType['contact.deleted']).sort(), ['deletedAt', 'email', 'id']);
    t.match(JSON.parse(receiver.received.find((r) => r.path === '/narrow')!.body), {
      type: 'contact.created',
      data: { email: 'x@a.test' },
    });
    t.match(JSON.parse(receiver.received.find((r) => r.path === '/deleted')!.body), {
      type: 'contact.deleted',
      data: { id: contact.id },
    });
  },
);

t.test('retries after 500s and timeouts, honouring Retry-After; each attempt logged; 410 disables', async (t) => {
  const h = await startTestApp(t, { webhooks: { ...FAST, timeoutMs: 2_000 } });
  const ws = await h.workspace();
  const receiver = await startReceiver(t, (_r, n) =>
    n === 1
      ? { status: 500, body: 'boom' }
      : n === 2
        ? { status: 200, holdMs: 10_000 }
        : n === 3
          ? { status: 503, headers: { 'retry-after': '1' } }
          : { status: 204 },
  );
  const e = await endpoint(h, ws.apiKey, { url: receiver.url, eventTypes: ['suppression.added'] });
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'retry@example.com' });
  const [d] = await eventually(async () => {
    const rows = await deliveries(h, ws.apiKey, e.id);
    return rows[0]?.status === 'delivered' && rows;
  });
  t.same(
    d.attempts.map((a: any) => [a.attempt, a.ok, a.statusCode]),
    [
      [1, false, 500],
      [2, false, null],
      [3, false, 503],
      [4, true, 204],
    ],
  );
  t.equal(d.attempts[0].responseExcerpt, 'boom');
  t.match(d.attempts[1].error, /ETIMEDOUT/);
  t.ok(
    receiver.received[3]!.at - receiver.received[2]!.at >= 950,
    'Retry-After: 1 waited a second, not the 50 ms schedule',
  );
  t.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, 1, 'one webhook-id across the retries');
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}`)).json().consecutiveFailures,
    0,
    'a success resets the count',
  );

  receiver.answer = () => ({ status: 410 });
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'gone@example.com' });
  const off = await eventually(async () => {
    const now = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}`)).json();
    return !now.enabled && now;
  });
  t.match(off, { enabled: false, disabledReason: 'gone', consecutiveFailures: 1 });
  t.ok(off.disabledAt);
  const gone = (await deliveries(h, ws.apiKey, e.id)).find((x: any) => x.lastStatusCode === 410);
  t.match(gone, { status: 'failed', attempts: [{ statusCode: 410 }] }, '410 is not retried');
});

t.test('the delivery log pages and filters by status', async (t) => {
  const h = await startTestApp(t, { webhooks: { ...FAST, retryScheduleMs: [] } });
  const ws = await h.workspace();
  // By the address, not by "bad" anywhere: the payload's random hex ids hold "bad" now and then.
  const receiver = await startReceiver(t, (r) => ({ status: r.body.includes('"email":"bad') ? 500 : 200 }));
  const e = await endpoint(h, ws.apiKey, { url: receiver.url, eventTypes: ['suppression.*'] });
  for (const email of ['a@x.test', 'bad1@x.test', 'c@x.test', 'bad2@x.test'])
    await h.request(ws.apiKey, 'POST', '/suppressions', { email });
  await eventually(
    async () =>
      (await deliveries(h, ws.apiKey, e.id)).every((d: any) => d.status !== 'pending') &&
      (await deliveries(h, ws.apiKey, e.id)).length === 4,
  );
  const failed = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries?status=failed`)).json().data;
  t.equal(failed.length, 2, JSON.stringify(failed.map((d: any) => d.attempts)));
  const p1 = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries?limit=3`)).json();
  const p2 = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries?limit=3&cursor=${p1.nextCursor}`)).json();
  t.same([p1.data.length, p1.hasMore, p2.data.length, p2.hasMore], [3, true, 1, false]);
  const one = await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries/${failed[0].id}`);
  t.same(one.json(), failed[0]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries/whd_nope`)), [
    404,
    'resource_not_found',
    'deliveryId',
  ]);
  const stats = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/stats`)).json();
  t.match(stats, {
    object: 'webhook_stats',
    endpointId: e.id,
    deliveries: { pending: 0, delivered: 2, failed: 2 },
    attempts: { total: 4, succeeded: 2, failed: 2 },
  });
  t.type(stats.durationMs.p50, 'number');
});

t.test('test event, replay of one delivery and of every failed one, webhook_disabled', async (t) => {
  const h = await startTestApp(t, { webhooks: { ...FAST, retryScheduleMs: [] } });
  const ws = await h.workspace();
  const receiver = await startReceiver(t, () => ({ status: 500 }));
  const e = await endpoint(h, ws.apiKey, { url: receiver.url });
  const test = await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
  t.equal(test.statusCode, 202);
  t.match(test.json(), { object: 'webhook_delivery', eventType: 'webhook.test', endpointId: e.id });
  await receiver.waitFor(1);
  t.match(
    JSON.parse(receiver.received[0]!.body),
    { type: 'webhook.test', data: { endpointId: e.id } },
    'sent whatever the subscription',
  );
  const failedTest = await eventually(async () => {
    const d = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries/${test.json().id}`)).json();
    return d.status === 'failed' && d;
  });
  t.equal(failedTest.attempts.length, 1);

  receiver.answer = () => ({ status: 200 });
  const replayed = await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/deliveries/${test.json().id}/replay`);
  t.equal(replayed.statusCode, 202);
  t.equal(replayed.json().status, 'pending');
  await receiver.waitFor(2);
  t.equal(
    receiver.received[1]!.headers['webhook-id'],
    receiver.received[0]!.headers['webhook-id'],
    'the same message again',
  );
  await eventually(
    async () =>
      (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries/${test.json().id}`)).json().status ===
      'delivered',
  );

  receiver.answer = () => ({ status: 500 });
  const since = new Date().toISOString();
  await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
  await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
  await eventually(
    async () =>
      (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries?status=failed`)).json().data.length === 2,
  );
  receiver.answer = () => ({ status: 200 });
  const all = await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/replay`, { since });
  t.same(all.json(), { object: 'webhook_replay', endpointId: e.id, since, replayed: 2 });
  await eventually(
    async () =>
      (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/deliveries?status=delivered`)).json().data.length === 3,
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/replay`, {})), [
    422,
    'invalid_parameter',
    'since',
  ]);

  const off = (await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, { enabled: false })).json();
  t.match(off, { enabled: false, disabledAt: null, disabledReason: null }, "a person's switch-off carries no reason");
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/replay`, { since })), [
    409,
    'webhook_disabled',
    null,
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/deliveries/${test.json().id}/replay`)), [
    409,
    'webhook_disabled',
    null,
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`)), [409, 'webhook_disabled', null]);
  const before = receiver.received.length;
  await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, { eventTypes: ['suppression.*'] });
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'quiet@example.com' });
  await new Promise((r) => setTimeout(r, 300));
  t.equal(receiver.received.length, before, 'a disabled endpoint hears nothing');
});

t.test('rotation: both secrets sign for 24 hours; the audit log shows every change without secrets', async (t) => {
  const ws = await h.workspace();
  const receiver = await startReceiver(t);
  const e = await endpoint(h, ws.apiKey, { url: receiver.url });
  const rotated = await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/rotate-secret`);
  t.equal(rotated.statusCode, 200);
  const r = rotated.json();
  t.not(r.secret, e.secret);
  t.ok(
    Math.abs(Date.parse(r.previousSecretExpiresAt) - Date.now() - 24 * 3600_000) < 60_000,
    'previous secret expires in 24 hours',
  );
  await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
  await receiver.waitFor(1);
  const got = receiver.received[0]!;
  t.equal(got.headers['webhook-signature']!.split(' ').length, 2, 'two signatures during the overlap');
  t.ok(new Webhook(r.secret).verify(got.body, got.headers), 'the new secret verifies');
  t.ok(new Webhook(e.secret).verify(got.body, got.headers), 'the old one still does');

  await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, { description: 'changed' });
  const audit = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/audit`)).json();
  t.same(
    audit.data.map((a: { type: string }) => a.type),
    ['WebhookEndpointCreated', 'WebhookSecretRotated', 'WebhookTestRequested', 'WebhookEndpointUpdated'],
  );
  t.notOk(
    JSON.stringify(audit).includes(e.secret) || JSON.stringify(audit).includes(r.secret),
    'no secret in the audit log',
  );
  t.equal(audit.data[1].data.secretChanged, true);
  t.match(audit.data[0].actor, { kind: 'apiKey' });
  const p1 = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/audit?limit=2`)).json();
  const p2 = (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/audit?limit=2&cursor=${p1.nextCursor}`)).json();
  t.same(
    [...p1.data, ...p2.data].map((a: { type: string }) => a.type),
    audit.data.map((a: { type: string }) => a.type),
  );
});

/** Notices are tried every few ms in these tests. */
const NOTICES = { pollMs: 20, retryMs: [50] };

/**
 * 100 failed attempts of one delivery, a millisecond apart and each looked for at once: the
 * endpoint's 100th failure comes quickly.
 */
const FAILING = { ...FAST, retryScheduleMs: Array(150).fill(1), pollMs: 1 };

const endpointNow = async (h: TestApp, key: string, id: string) =>
  (await h.request(key, 'GET', `/webhooks/${id}`)).json();
const switchedOff = (h: TestApp, key: string, id: string) =>
  eventually(async () => {
    const now = await endpointNow(h, key, id);
    return !now.enabled && now;
  }, 30_000);

/**
 * Members of a workspace under the roles named, written into the members read model: joining
 * takes an invitation mailed and accepted (test/http/members.test.ts drives that); what is tested
 * here is whom a notice reaches. The roles are real ones, seeded or made through the API.
 */
async function addMembers(
  h: TestApp,
  members: { workspaceId: string; email: string; roleId: string }[],
): Promise<void> {
  for (const [n, m] of members.entries()) {
    await h.system.database.pool.query(
      'INSERT INTO memberships (workspace_id, user_id, email, is_owner, rank, role_id, created_at) VALUES ($1, $2, $3, false, 1, $4, now())',
      [m.workspaceId, `usr_test${n}`, m.email, m.roleId],
    );
  }
}

async function roleId(h: TestApp, key: string, name: string): Promise<string> {
  return (await h.request(key, 'GET', '/roles')).json().data.find((r: { name: string }) => r.name === name).id;
}

t.test(
  '100 consecutive failures switch the endpoint off and mail the owner and members who can read webhooks, until the mail is taken; re-enabling resets the count',
  async (t) => {
    const smtp = await startSmtpServer(t, (n) => n > 1);
    const h = await startTestApp(t, { smtpUrl: smtp.url, webhooks: FAILING, webhookNotices: NOTICES });
    const ws = await h.workspace();
    const other = await h.workspace();
    const hooksReader = (
      await h.request(ws.apiKey, 'POST', '/roles', { name: 'Hook reader', permissions: ['webhooks:read'] })
    ).json().id;
    await addMembers(h, [
      { workspaceId: ws.workspaceId, email: 'developer@example.com', roleId: await roleId(h, ws.apiKey, 'Developer') },
      { workspaceId: ws.workspaceId, email: 'reader@example.com', roleId: hooksReader },
      { workspaceId: ws.workspaceId, email: 'viewer@example.com', roleId: await roleId(h, ws.apiKey, 'Viewer') },
      {
        workspaceId: other.workspaceId,
        email: 'elsewhere@example.com',
        roleId: await roleId(h, other.apiKey, 'Developer'),
      },
    ]);
    const receiver = await startReceiver(t, () => ({ status: 500 }));
    const e = await endpoint(h, ws.apiKey, { url: receiver.url });
    await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
    const off = await switchedOff(h, ws.apiKey, e.id);
    t.match(off, { enabled: false, disabledReason: 'consecutive_failures', consecutiveFailures: 100 });
    t.ok(off.lastDeliveryAt && off.disabledAt, 'lastDeliveryAt moved on failed attempts; disabledAt is set');
    await new Promise((r) => setTimeout(r, 300));
    t.equal(receiver.received.length, 100, 'exactly 100 attempts reached the receiver');
    const mail = await eventually(async () => smtp.mails[0]);
    t.same(
      mail.to,
      ['developer@example.com', 'owner1@example.com', 'reader@example.com'],
      'the owner and the members whose role holds webhooks:read',
    );
    t.match(mail.subject, /webhook endpoint .* disabled/i);
    t.match(mail.text, new RegExp(e.id));
    t.match(mail.text, /100 deliveries in a row failed/);
    t.equal(smtp.offered(), 2, 'the server refused the first offer; the notice was tried again');
    await new Promise((r) => setTimeout(r, 300));
    t.equal(smtp.mails.length, 1, 'mailed once');

    receiver.answer = () => ({ status: 200 });
    const on = (await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, { enabled: true })).json();
    t.match(on, { enabled: true, disabledAt: null, disabledReason: null, consecutiveFailures: 0 });
    const replay = (
      await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/replay`, { since: new Date(0).toISOString() })
    ).json();
    t.equal(replay.replayed, 1);
    await receiver.waitFor(101);
  },
);

t.test(
  'a switch-off whose append failed after the 100th failure was counted is written again, and mailed',
  async (t) => {
    const smtp = await startSmtpServer(t);
    // staleAfterMs: how soon an owed switch-off is looked for again.
    const h = await startTestApp(t, {
      smtpUrl: smtp.url,
      webhooks: { ...FAILING, staleAfterMs: 1_000 },
      webhookNotices: NOTICES,
    });
    // The first append of a switch-off fails in the database, after the count is committed.
    await h.system.database.pool.query(`
    CREATE SEQUENCE test_disable_appends;
    CREATE FUNCTION test_fail_first_disable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF nextval('test_disable_appends') = 1 THEN RAISE EXCEPTION 'injected: the switch-off append fails'; END IF;
      RETURN NEW;
    END $$;
    CREATE TRIGGER test_fail_first_disable BEFORE INSERT ON es_events FOR EACH ROW
      WHEN (NEW.type = 'WebhookEndpointDisabled') EXECUTE FUNCTION test_fail_first_disable();`);
    const ws = await h.workspace();
    const receiver = await startReceiver(t, () => ({ status: 500 }));
    const e = await endpoint(h, ws.apiKey, { url: receiver.url });
    await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
    const off = await switchedOff(h, ws.apiKey, e.id);
    t.match(off, { enabled: false, disabledReason: 'consecutive_failures', consecutiveFailures: 100 });
    t.ok(off.disabledAt);
    const { rows } = await h.system.database.pool.query('SELECT last_value FROM test_disable_appends');
    t.ok(Number(rows[0].last_value) >= 2, 'the first append failed; a later one wrote the switch-off');
    const mail = await eventually(async () => smtp.mails[0]);
    t.same(mail.to, ['owner1@example.com']);
    t.equal(receiver.received.length, 100);
    t.equal(
      (await h.request(ws.apiKey, 'PATCH', `/webhooks/${e.id}`, { enabled: true })).json().consecutiveFailures,
      0,
      'and it can be switched on again',
    );
  },
);

t.test('failures of attempts in flight when the count reaches 100 are not counted', async (t) => {
  const smtp = await startSmtpServer(t);
  const h = await startTestApp(t, { deliver: false, smtpUrl: smtp.url, webhooks: FAST });
  const ws = await h.workspace();
  const receiver = await startReceiver(t, () => ({ status: 500, holdMs: 500 }));
  const e = await endpoint(h, ws.apiKey, { url: receiver.url });
  for (let i = 0; i < 120; i++) await h.request(ws.apiKey, 'POST', `/webhooks/${e.id}/test`);
  // One sender takes all 120 at once: every attempt starts before the first one fails.
  const sender = await openSystem(h.url, {
    secretsKey: TEST_SECRETS_KEY,
    project: false,
    smtpUrl: smtp.url,
    webhooks: { ...FAST, retryScheduleMs: [], timeoutMs: 5_000, concurrency: 200 },
    webhookNotices: NOTICES,
  });
  t.teardown(() => sender.close());
  await receiver.waitFor(120);
  const off = await switchedOff(h, ws.apiKey, e.id);
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/webhooks/${e.id}/stats`)).json().deliveries.failed === 120,
  );
  t.match(await endpointNow(h, ws.apiKey, e.id), {
    enabled: false,
    disabledReason: 'consecutive_failures',
    consecutiveFailures: 100,
  });
  t.ok(off.disabledAt);
  await eventually(async () => smtp.mails[0]);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(smtp.mails.length, 1, 'one switch-off, one notice');
});

t.test("a receiver's answer holding NUL is logged with the attempt, not left unstorable", async (t) => {
  const ws = await h.workspace();
  const receiver = await startReceiver(t, () => ({ status: 200, body: 'ok \u0000 done' }));
  const e = await endpoint(h, ws.apiKey, { url: receiver.url, eventTypes: ['suppression.added'] });
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'nul-answer@example.com' });
  const [d] = await eventually(async () => {
    const rows = await deliveries(h, ws.apiKey, e.id);
    return rows[0]?.status === 'delivered' && rows;
  }, 5_000);
  t.match(d.attempts, [{ attempt: 1, ok: true, statusCode: 200, responseExcerpt: 'ok \ufffd done' }]);
});
