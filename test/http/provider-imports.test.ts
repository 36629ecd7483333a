import t from 'tap';
import { startTestApp, type TestApp } from '../support/app.ts';
import { errorOf, keyWith } from '../support/domains.ts';
import { walkPages } from '../support/paging.ts';
import { RESEND_KEYS, resendData, startResendServer } from '../support/providers/resend.ts';
import { eventually } from '../support/receiver.ts';

const PER_AUDIENCE = 400;
const data = resendData({ audiences: 3, perAudience: PER_AUDIENCE, unsubscribedEvery: 10 });
const resend = await startResendServer(t, data);
const h = await startTestApp(t, {
  providerImports: {
    baseUrls: { resend: resend.url },
    allowPrivate: true,
    pollMs: 20,
    retryBaseMs: 50,
    retryMaxMs: 2000,
  },
});

const ALL = ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'];

/** The distinct people of the seed: subscribed ones are imported, unsubscribed ones counted. */
function people() {
  const all = new Map<string, boolean>();
  for (const list of data.contacts.values()) for (const c of list) all.set(c.email.toLowerCase(), !c.unsubscribed);
  const subscribed = [...all.values()].filter(Boolean).length;
  return { subscribed, unsubscribed: all.size - subscribed };
}

async function settled(app: TestApp, key: string, id: string, timeoutMs = 120_000) {
  return eventually(async () => {
    const got = (await app.request(key, 'GET', `/provider-imports/${id}`)).json();
    return ['completed', 'failed', 'cancelled'].includes(got.status) ? got : null;
  }, timeoutMs);
}

const vaultRows = async () =>
  Number(
    (await h.system.database.pool.query("SELECT count(*) AS n FROM vault_secrets WHERE id LIKE 'provider-import:%'"))
      .rows[0].n,
  );
const eventsHolding = async (text: string) =>
  Number(
    (await h.system.database.pool.query('SELECT count(*) AS n FROM es_events WHERE data::text LIKE $1', [`%${text}%`]))
      .rows[0].n,
  );

t.test('inspect: counts per resource with `more`, nothing stored, the key not kept', async (t) => {
  const ws = await h.workspace();
  const res = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', { apiKey: RESEND_KEYS.full });
  t.equal(res.statusCode, 200, res.body);
  const body = res.json();
  t.equal(body.provider, 'resend', 'the first provider is the default');
  t.same(body.resources, ['audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys']);
  t.same(body.counts.suppressions, { count: 0, more: false }, 'Resend has no suppression API');
  t.same(body.counts.audiences, { count: 3, more: false });
  t.same(body.counts.contacts, { count: 300, more: true }, 'a first page of each audience, more past it');
  t.same(body.counts.templates, { count: 2, more: false });
  t.same(body.counts.webhooks, { count: 2, more: false });
  t.same(body.counts.domains, { count: 2, more: false });
  t.same(body.counts['api-keys'], { count: 2, more: false });
  t.same(Object.keys(body.counts).sort(), [...ALL].sort());
  t.equal((await h.request(ws.apiKey, 'GET', '/provider-imports')).json().data.length, 0, 'nothing stored');
  t.equal(await vaultRows(), 0, 'the key is not kept');
  t.equal(await eventsHolding(RESEND_KEYS.full), 0, 'nor written anywhere in the log');
  const seen = resend.seen.filter((r) => r.headers.authorization === `Bearer ${RESEND_KEYS.full}`);
  t.ok(seen.length > 0, 'Resend was asked with its own auth header');
  t.ok(
    seen.every((r) => r.query.get('limit') !== null),
    'every list asked for a page (limit), never everything at once',
  );

  const explicit = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    apiKey: RESEND_KEYS.full,
    provider: 'resend',
  });
  t.equal(explicit.statusCode, 200);
});

t.test('inspect: key refusals and input', async (t) => {
  const ws = await h.workspace();
  const inspect = (body: object) => h.request(ws.apiKey, 'POST', '/provider-imports/inspect', body);
  const restricted = await inspect({ apiKey: RESEND_KEYS.sendOnly });
  t.same(errorOf(restricted), [400, 'restricted_key', 'apiKey']);
  t.match(restricted.json().error.message, /only send/);
  t.notMatch(restricted.body, RESEND_KEYS.sendOnly, 'the key is never echoed');
  const wrong = await inspect({ apiKey: 're_wrong_key' });
  t.same(errorOf(wrong), [400, 'provider_key_refused', 'apiKey']);
  t.match(wrong.json().error.message, /Resend refused the key: API key is invalid/);
  t.same(errorOf(await inspect({})), [422, 'invalid_parameter', 'apiKey']);
  t.same(errorOf(await inspect({ apiKey: '' })), [422, 'invalid_parameter', 'apiKey']);
  t.same(errorOf(await inspect({ apiKey: 'x'.repeat(1001) })), [422, 'invalid_parameter', 'apiKey']);
  t.equal((await inspect({ apiKey: 'x'.repeat(1000) })).json().error.code, 'provider_key_refused', '1,000 is the edge');
  t.same(errorOf(await inspect({ apiKey: RESEND_KEYS.full, provider: 'mailchimp' })), [
    422,
    'invalid_parameter',
    'provider',
  ]);
  t.same(errorOf(await inspect({ apiKey: RESEND_KEYS.full, extra: 1 })), [422, 'unknown_parameter', 'extra']);
});

t.test('inspect: a provider asking to slow down for long is 503 with Retry-After', async (t) => {
  const ws = await h.workspace();
  resend.throttle(2, 30);
  const res = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', { apiKey: RESEND_KEYS.full });
  resend.throttle(0);
  t.same(errorOf(res), [503, 'provider_unavailable', null]);
  t.equal(res.headers['retry-after'], '30');
  // A short wait is taken in place.
  resend.throttle(1, 1);
  const waited = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', { apiKey: RESEND_KEYS.full });
  t.equal(waited.statusCode, 200, waited.body);
});

t.test('policies: scopes, narrowed keys, test keys, foreign ids', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const reader = await keyWith(h, ws.apiKey, { scopes: ['settings:read'] });
  t.equal(
    errorOf(await h.request(reader, 'POST', '/provider-imports/inspect', { apiKey: RESEND_KEYS.full }))[1],
    'insufficient_scope',
  );
  t.equal(
    errorOf(
      await h.request(reader, 'POST', '/provider-imports', { apiKey: RESEND_KEYS.full, resources: ['domains'] }),
    )[1],
    'insufficient_scope',
  );
  t.equal((await h.request(reader, 'GET', '/provider-imports')).statusCode, 200);
  const writer = await keyWith(h, ws.apiKey, { scopes: ['settings:write'] });
  t.equal(errorOf(await h.request(writer, 'GET', '/provider-imports'))[1], 'insufficient_scope');

  const narrow = await keyWith(h, ws.apiKey, {
    scopes: ['settings:read', 'settings:write'],
    addressAllowlist: ['a@example.net'],
  });
  const narrowByDomain = await keyWith(h, ws.apiKey, {
    scopes: ['settings:read', 'settings:write'],
    domainAllowlist: ['example.net'],
  });
  t.equal(
    errorOf(await h.request(narrowByDomain, 'POST', '/provider-imports/inspect', { apiKey: RESEND_KEYS.full }))[1],
    'capability_unsupported',
    'narrowed to a domain: refused too',
  );
  for (const [method, path, body] of [
    ['GET', '/provider-imports'],
    ['POST', '/provider-imports/inspect', { apiKey: RESEND_KEYS.full }],
    ['POST', '/provider-imports', { apiKey: RESEND_KEYS.full, resources: ['domains'] }],
  ] as const)
    t.same(errorOf(await h.request(narrow, method, path, body)), [422, 'capability_unsupported', 'addressAllowlist']);

  const testKey = await keyWith(h, ws.apiKey, { scopes: ['settings:read', 'settings:write'], mode: 'test' });
  t.equal(
    errorOf(
      await h.request(testKey, 'POST', '/provider-imports', { apiKey: RESEND_KEYS.full, resources: ['domains'] }),
    )[1],
    'beyond_caller_authority',
  );

  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    apiKey: RESEND_KEYS.full,
    resources: ['domains'],
  });
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id;
  t.equal((await h.request(testKey, 'GET', `/provider-imports/${id}`)).statusCode, 200, 'test keys read');
  t.same(errorOf(await h.request(other.apiKey, 'GET', `/provider-imports/${id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(other.apiKey, 'POST', `/provider-imports/${id}/cancel`)), [
    404,
    'resource_not_found',
    'id',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/provider-imports/pim_nope')), [404, 'resource_not_found', 'id']);
  await settled(h, ws.apiKey, id);
});

t.test('create: body rules, the key checked first, one per workspace', async (t) => {
  const ws = await h.workspace();
  const create = (body: object) => h.request(ws.apiKey, 'POST', '/provider-imports', body);
  t.same(errorOf(await create({ apiKey: RESEND_KEYS.full })), [422, 'invalid_parameter', 'resources']);
  t.same(errorOf(await create({ apiKey: RESEND_KEYS.full, resources: [] })), [422, 'invalid_parameter', 'resources']);
  t.same(errorOf(await create({ apiKey: RESEND_KEYS.full, resources: ['lists'] })), [
    422,
    'invalid_parameter',
    'resources.0',
  ]);
  t.same(errorOf(await create({ apiKey: RESEND_KEYS.full, resources: [...ALL, 'domains'] })), [
    422,
    'invalid_parameter',
    'resources',
  ]);
  t.same(errorOf(await create({ apiKey: RESEND_KEYS.sendOnly, resources: ['contacts'] })), [
    400,
    'restricted_key',
    'apiKey',
  ]);
  t.same(errorOf(await create({ apiKey: 're_bad', resources: ['contacts'] })), [400, 'provider_key_refused', 'apiKey']);
  t.equal((await h.request(ws.apiKey, 'GET', '/provider-imports')).json().data.length, 0, 'refused keys store nothing');
  t.equal(await vaultRows(), 0);

  const first = await create({ apiKey: RESEND_KEYS.full, resources: ALL });
  t.equal(first.statusCode, 201, first.body);
  const body = first.json();
  t.match(body, { object: 'provider_import', provider: 'resend', status: 'queued', report: null, lastError: null });
  t.same(body.resources, ALL, 'all seven, in import order');
  t.notMatch(first.body, RESEND_KEYS.full, 'the key is never answered');
  const second = await create({ apiKey: RESEND_KEYS.full, resources: ['contacts'] });
  t.same(errorOf(second), [409, 'already_running', null]);
  t.equal(await vaultRows(), 1, 'the refused start left no key behind');
  const done = await settled(h, ws.apiKey, body.id);
  t.equal(done.status, 'completed');
  t.equal(await vaultRows(), 0, 'the key is erased at the end');
  t.equal(await eventsHolding(RESEND_KEYS.full), 0, 'the key was never in an event');
  const again = await create({ apiKey: RESEND_KEYS.full, resources: ['domains'] });
  t.equal(again.statusCode, 201, 'a new one once the first has ended');
  await settled(h, ws.apiKey, again.json().id);
});

t.test('an import from Resend end to end, a 429 in the middle, and a re-run that duplicates nothing', async (t) => {
  const ws = await h.workspace();
  const before = resend.seen.length;
  // A few pages in: two 429s in a row, with Retry-After.
  resend.throttle(2, 1, 8);
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', { apiKey: RESEND_KEYS.full, resources: ALL });
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id;
  t.equal(await vaultRows(), 1, 'the key waits in the vault while the import runs');
  const stored = await h.system.database.pool.query(
    "SELECT ciphertext FROM vault_secrets WHERE id LIKE 'provider-import:%'",
  );
  t.notOk(String(stored.rows[0].ciphertext).includes(RESEND_KEYS.full), 'encrypted at rest');
  const done = await settled(h, ws.apiKey, id);
  t.equal(done.status, 'completed', JSON.stringify(done));
  const asked = resend.seen.slice(before);
  t.ok(
    asked.some((r) => r.query.get('after') !== null),
    'paged with `after`',
  );
  const { subscribed, unsubscribed } = people();
  const report = done.report;
  t.same(report.suppressions, { imported: 0, existing: 0, failed: 0 });
  t.same(report.audiences, { imported: 3, existing: 0, failed: 0 });
  t.same(report.contacts, { imported: subscribed, existing: 0, failed: 0, unsubscribed });
  t.same(report.templates, { imported: 2, existing: 0, failed: 0 });
  t.same(report.webhooks, { imported: 1, existing: 0, failed: 1 });
  t.same(
    report.checklist.domains.map((d: { name: string; status: string }) => [d.name, d.status]),
    [
      ['mail.example.net', 'verified'],
      ['news.example.net', 'not_started'],
    ],
  );
  t.same(
    report.checklist.apiKeys.map((k: { name: string }) => k.name),
    ['Production', 'Staging'],
  );
  t.match(report.errors, [{ resource: 'webhooks', code: 'invalid_parameter', sourceId: data.webhooks[1]!.id }]);
  t.equal(await vaultRows(), 0, 'the key is erased');

  // What arrived, as the resources' own reads show it.
  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  t.same(
    audiences
      .map((a: { name: string }) => a.name)
      .filter((n: string) => n.startsWith('Resend'))
      .sort(),
    ['Resend list 0', 'Resend list 1', 'Resend list 2'],
  );
  const list1 = audiences.find((a: { name: string }) => a.name === 'Resend list 1');
  // The first five of each list are the last five of the one before.
  const n = PER_AUDIENCE - 4;
  const shared = await h.request(ws.apiKey, 'GET', `/contacts/${encodeURIComponent(`person${n}@example.test`)}`);
  t.equal(shared.statusCode, 200, shared.body);
  t.equal(shared.json().name, `First${n} Last${n}`, 'names joined');
  t.ok(shared.json().audienceIds?.includes(list1.id) ?? true, 'in the second list too');
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/contacts/${encodeURIComponent('person9@example.test')}`)).statusCode,
    404,
    'an unsubscribed contact is not imported',
  );
  const templates = (await h.request(ws.apiKey, 'GET', '/templates?limit=100')).json().data;
  const welcome = templates.find((x: { name: string }) => x.name === 'Welcome');
  const full = (await h.request(ws.apiKey, 'GET', `/templates/${welcome.id}`)).json();
  t.equal(full.status, 'active', 'published at Resend, published here');
  t.equal(full.latest.engine, 'html');
  t.equal(full.latest.subject, 'Welcome, {{FIRST_NAME}}');
  t.equal(full.latest.html, '<p>Hi {{FIRST_NAME}}, your plan is {{PLAN}}.</p>');
  t.same(full.latest.props.map((p: { name: string }) => p.name).sort(), ['FIRST_NAME', 'PLAN']);
  const draft = templates.find((x: { name: string }) => x.name === 'Draft letter');
  t.equal(draft.status, 'draft');
  const hooks = (await h.request(ws.apiKey, 'GET', '/webhooks')).json().data;
  t.equal(hooks.length, 1);
  t.match(hooks[0], { url: 'https://hooks.example.net/resend', enabled: false });
  t.same(hooks[0].eventTypes, ['email.delivered', 'email.bounced'], 'Resend events we have; email.failed dropped');

  // The same import again: everything is there already, nothing is made twice.
  const rerun = await h.request(ws.apiKey, 'POST', '/provider-imports', { apiKey: RESEND_KEYS.full, resources: ALL });
  t.equal(rerun.statusCode, 201, rerun.body);
  const second = await settled(h, ws.apiKey, rerun.json().id);
  t.equal(second.status, 'completed');
  t.same(second.report.audiences, { imported: 0, existing: 3, failed: 0 });
  t.same(
    second.report.contacts,
    { imported: 0, existing: subscribed, failed: 0, unsubscribed },
    'each person counted once, in two lists or not',
  );
  t.same(second.report.templates, { imported: 0, existing: 2, failed: 0 });
  t.same(second.report.webhooks, { imported: 0, existing: 1, failed: 1 }, 'the refused URL is refused again');
  const pool = h.system.database.pool;
  const contacts = await pool.query(
    "SELECT count(*) AS n FROM es_events WHERE type = 'ContactCreated' AND metadata->>'workspaceId' = $1",
    [ws.workspaceId],
  );
  t.equal(Number(contacts.rows[0].n), subscribed, 'one ContactCreated per subscribed person, over both runs');
  t.equal((await h.request(ws.apiKey, 'GET', '/webhooks')).json().data.length, 1);
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/audiences?limit=100'))
      .json()
      .data.filter((a: { name: string }) => a.name.startsWith('Resend')).length,
    3,
  );
});

t.test('cancel: a running import stops, its key is erased; a settled one is answered as it is', async (t) => {
  const ws = await h.workspace();
  resend.hold();
  const creating = h.request(ws.apiKey, 'POST', '/provider-imports', {
    apiKey: RESEND_KEYS.full,
    resources: ['contacts'],
  });
  await eventually(async () => resend.seen.length > 0);
  resend.release();
  const made = await creating;
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id;
  resend.hold();
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/provider-imports/${id}`)).json().status === 'running',
  );
  const cancelled = await h.request(ws.apiKey, 'POST', `/provider-imports/${id}/cancel`);
  t.equal(cancelled.statusCode, 200, cancelled.body);
  t.equal(cancelled.json().status, 'cancelled');
  t.ok(cancelled.json().finishedAt);
  t.equal(await vaultRows(), 0, 'the key is erased at once');
  resend.release();
  await new Promise((r) => setTimeout(r, 500));
  const after = (await h.request(ws.apiKey, 'GET', `/provider-imports/${id}`)).json();
  t.equal(after.status, 'cancelled', 'stays cancelled');
  const run = await h.system.database.pool.query('SELECT status FROM provider_import_runs WHERE id = $1', [id]);
  t.equal(run.rows[0].status, 'done', 'the run stopped');
  const again = await h.request(ws.apiKey, 'POST', `/provider-imports/${id}/cancel`);
  t.equal(again.statusCode, 200);
  t.equal(again.json().status, 'cancelled');
  const next = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    apiKey: RESEND_KEYS.full,
    resources: ['domains'],
  });
  t.equal(next.statusCode, 201, 'a cancelled import no longer holds the workspace');
  await settled(h, ws.apiKey, next.json().id);
});

t.test('a key revoked at the provider midway fails the import; its key is erased', async (t) => {
  const ws = await h.workspace();
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    apiKey: RESEND_KEYS.full,
    resources: ['contacts'],
  });
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id;
  resend.hold();
  await eventually(
    async () => (await h.request(ws.apiKey, 'GET', `/provider-imports/${id}`)).json().status === 'running',
  );
  data.revoked.add(RESEND_KEYS.full);
  t.teardown(() => data.revoked.delete(RESEND_KEYS.full));
  resend.release();
  const done = await settled(h, ws.apiKey, id);
  t.equal(done.status, 'failed');
  t.match(done.lastError, /Resend refused the key: API key is invalid/);
  t.ok(done.finishedAt);
  t.equal(await vaultRows(), 0, 'the key is erased when it fails');
  data.revoked.delete(RESEND_KEYS.full);
  const next = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    apiKey: RESEND_KEYS.full,
    resources: ['domains'],
  });
  t.equal(next.statusCode, 201, 'a failed import no longer holds the workspace');
  await settled(h, ws.apiKey, next.json().id);
});

t.test('list: newest first with reports, paging by id with rows added between, cursors checked', async (t) => {
  const ws = await h.workspace();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
      apiKey: RESEND_KEYS.full,
      resources: ['api-keys'],
    });
    t.equal(made.statusCode, 201, made.body);
    ids.push(made.json().id);
    await settled(h, ws.apiKey, made.json().id);
  }
  const first = (await h.request(ws.apiKey, 'GET', '/provider-imports')).json();
  t.same(
    first.data.map((x: { id: string }) => x.id),
    [...ids].reverse(),
  );
  t.ok(
    first.data.every((x: { report: unknown }) => x.report !== null),
    'each with its report',
  );
  let added = '';
  const walk = await walkPages(h, ws.apiKey, '/provider-imports?limit=1', async () => {
    const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
      apiKey: RESEND_KEYS.full,
      resources: ['api-keys'],
    });
    added = made.json().id;
    await settled(h, ws.apiKey, added);
  });
  t.same(walk.seen, [...ids].reverse(), 'a row added mid-walk (newer) is not in the walk');
  t.equal(walk.pages, 3);
  const page = await h.request(ws.apiKey, 'GET', `/provider-imports?limit=1&cursor=${ids[2]}`);
  t.same(
    page.json().data.map((x: { id: string }) => x.id),
    [ids[1]],
    'the cursor is the id of the last row',
  );
  const other = await h.workspace();
  t.same(errorOf(await h.request(other.apiKey, 'GET', `/provider-imports?cursor=${ids[0]}`)), [
    400,
    'invalid_cursor',
    'cursor',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/provider-imports?cursor=pim_000000000000000000000000')), [
    400,
    'invalid_cursor',
    'cursor',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/provider-imports?limit=101')), [
    422,
    'invalid_parameter',
    'limit',
  ]);
  t.equal((await h.request(ws.apiKey, 'GET', '/provider-imports?limit=100')).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/provider-imports?limit=0')), [422, 'invalid_parameter', 'limit']);
  t.ok(added);
});
