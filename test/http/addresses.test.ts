import t from 'tap';
import { addDomain } from '../../commands/domains/handlers.ts';
import { addDomain as addDomainOverHttp, startDomainsApp } from '../support/domains.ts';
import { addressNamesStream } from '../../domain/address-names/events.ts';
import { ADDRESSES_MAX } from '../../domain/address-names/decide.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

type Workspace = Awaited<ReturnType<TestApp['workspace']>>;
const operator = (ws: Workspace) => ({ workspaceId: ws.workspaceId, kind: 'operator' as const, id: null });

/** A domain of the workspace, added by the domains slice's own command. */
const domain = (h: TestApp, ws: Workspace, name: string) =>
  addDomain(h.system.commands, h.system.domains, operator(ws), { domain: name }, new Date().toISOString());

async function create(h: TestApp, key: string, address: string, extra: object = {}) {
  const res = await h.request(key, 'POST', '/addresses', { address, ...extra });
  if (res.statusCode !== 201) throw new Error(`address not created: ${res.statusCode} ${res.body}`);
  return res.json();
}

async function keyWith(h: TestApp, owner: string, body: object): Promise<string> {
  const res = await h.request(owner, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

const listed = async (h: TestApp, key: string, url: string) =>
  (await h.request(key, 'GET', url)).json().data.map((a: { address: string }) => a.address);

t.test('addresses: create, read, list, update, delete', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const domainId = await domain(h, ws, 'example.com');
  const other = await domain(h, ws, 'example.org');

  const res = await h.request(ws.apiKey, 'POST', '/addresses', { address: '  Jane.Doe@Example.COM ' });
  t.equal(res.statusCode, 201);
  const a = res.json();
  t.match(a, {
    object: 'address',
    address: 'jane.doe@example.com',
    localPart: 'jane.doe',
    domain: 'example.com',
    domainId,
    enabled: true,
    timeZone: 'UTC',
    login: { username: 'jane.doe@example.com' },
    forwards: [],
    appPasswords: [],
  });
  t.match(a.id, /^addr_[0-9a-f]{24}$/);
  t.same((await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json(), a, 'a read right after sees it');

  const idn = await create(h, ws.apiKey, 'info@EXAMPLE.org', { enabled: false });
  t.equal(idn.enabled, false);
  t.same(await listed(h, ws.apiKey, '/addresses'), ['info@example.org', 'jane.doe@example.com'], 'alphabetical');
  t.same(await listed(h, ws.apiKey, `/domains/${domainId}/addresses`), ['jane.doe@example.com'], 'one domain');
  t.same(await listed(h, ws.apiKey, `/domains/${other}/addresses`), ['info@example.org']);
  const row = (await h.request(ws.apiKey, 'GET', '/addresses')).json().data[1];
  t.notOk('forwards' in row, 'lists show no forwards');

  const disabled = await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { enabled: false });
  t.equal(disabled.statusCode, 200);
  t.equal(disabled.json().enabled, false);
  t.equal((await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, {})).json().enabled, false, 'an empty patch');
  t.equal((await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { enabled: true })).json().enabled, true);
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { address: 'x@example.com' })), [
    422,
    'unknown_parameter',
    'address',
  ]);

  // The time zone its rules read hour and weekday in: an IANA name or UTC, kept by other changes.
  const zoned = await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { timeZone: 'Asia/Tokyo' });
  t.equal(zoned.statusCode, 200, zoned.body);
  t.match(zoned.json(), { timeZone: 'Asia/Tokyo', enabled: true });
  t.equal((await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json().timeZone, 'Asia/Tokyo', 'the single read');
  t.match(
    (await h.request(ws.apiKey, 'GET', '/addresses')).json().data,
    [
      { address: 'info@example.org', timeZone: 'UTC' },
      { id: a.id, timeZone: 'Asia/Tokyo' },
    ],
    'the list',
  );
  t.match((await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { enabled: false })).json(), {
    enabled: false,
    timeZone: 'Asia/Tokyo',
  });
  t.match((await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { enabled: true, timeZone: 'UTC' })).json(), {
    enabled: true,
    timeZone: 'UTC',
  });
  t.equal(
    (await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { timeZone: 'asia/tokyo' })).json().timeZone,
    'Asia/Tokyo',
    'answered as the zone database writes it',
  );
  for (const timeZone of ['Mars/Olympus', 'GMT+9', '', 'x'.repeat(65), 9])
    t.same(
      errorOf(await h.request(ws.apiKey, 'PATCH', `/addresses/${a.id}`, { enabled: false, timeZone })),
      [422, 'invalid_parameter', 'timeZone'],
      JSON.stringify(timeZone),
    );
  t.match(
    (await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).json(),
    { timeZone: 'Asia/Tokyo', enabled: true },
    'a refused PATCH changes nothing',
  );

  t.same((await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}`)).json(), {
    object: 'address',
    id: a.id,
    deleted: true,
  });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/addresses/${a.id}`)), [404, 'resource_not_found', 'id']);
  const again = await create(h, ws.apiKey, 'jane.doe@example.com');
  t.not(again.id, a.id, 'a deleted address may be created again, under a new id');
});

t.test('addresses: the rules of a name, unknown and foreign domains, reserved and taken names', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const stranger = await h.workspace();
  await domain(h, ws, 'example.com');
  await domain(h, stranger, 'example.net');
  const post = (body: object) => h.request(ws.apiKey, 'POST', '/addresses', body);

  for (const address of ['no-at', 'a+tag@example.com', 'a..b@example.com', '"q"@example.com', 'jörg@example.com']) {
    t.same(errorOf(await post({ address })), [422, 'invalid_parameter', 'address'], address);
  }
  t.match((await post({ address: '*@example.com' })).json().error, {
    code: 'invalid_parameter',
    message: /catchAll/,
  });
  t.same(errorOf(await post({ address: `${'a'.repeat(65)}@example.com` })), [422, 'invalid_parameter', 'address']);
  t.equal((await post({ address: `${'a'.repeat(64)}@example.com` })).statusCode, 201, '64 characters: the edge');
  t.same(errorOf(await post({})), [422, 'invalid_parameter', 'address']);
  t.same(errorOf(await post({ address: 'a@example.com', colour: 'red' })), [422, 'unknown_parameter', 'colour']);
  t.same(errorOf(await post({ address: 'a@example.org' })), [422, 'unknown_domain', 'address'], 'no such domain');
  t.same(
    errorOf(await post({ address: 'a@example.net' })),
    [422, 'unknown_domain', 'address'],
    "another workspace's domain",
  );
  for (const local of ['postmaster', 'abuse', 'mailer-daemon', 'Hostmaster']) {
    t.same(errorOf(await post({ address: `${local}@example.com` })), [409, 'address_reserved', 'address'], local);
  }
  await create(h, ws.apiKey, 'sales@example.com');
  t.same(errorOf(await post({ address: 'SALES@example.com' })), [409, 'address_unavailable', 'address']);
});

t.test('addresses: 1,000 per workspace, at the edge and one past; racing creates have one winner', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const domainId = await domain(h, ws, 'example.com');
  // The registry decides the limit: fill it with registrations, as 998 earlier creates would have.
  await h.system.store.append(
    addressNamesStream(ws.workspaceId),
    Array.from({ length: ADDRESSES_MAX - 2 }, (_, i) => ({
      type: 'AddressRegistered',
      version: 1,
      data: {
        addressId: `addr_${String(i).padStart(24, '0')}`,
        address: `n${i}@example.com`,
        domainId,
        registeredAt: new Date().toISOString(),
      },
      metadata: { workspaceId: ws.workspaceId },
    })),
    'no_stream',
  );
  const racing = await Promise.all(
    ['r1', 'r2', 'r3', 'r4', 'r5'].map((l) =>
      h.request(ws.apiKey, 'POST', '/addresses', { address: `${l}@example.com` }),
    ),
  );
  t.same(
    racing.map((r) => r.statusCode).sort(),
    [201, 201, 422, 422, 422],
    'the 999th and the 1,000th are made, then no more',
  );
  t.same(errorOf(racing.find((r) => r.statusCode === 422)!), [422, 'workspace_limit_reached', null]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/addresses', { address: 'late@example.com' })), [
    422,
    'workspace_limit_reached',
    null,
  ]);
  const made = racing.filter((r) => r.statusCode === 201).map((r) => r.json());
  await h.request(ws.apiKey, 'DELETE', `/addresses/${made[0].id}`);
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/addresses', { address: 'late@example.com' })).statusCode,
    201,
    'a delete frees one',
  );

  const other = await h.workspace();
  await domain(h, other, 'example.org');
  const same = await Promise.all(
    ['team', 'Team', 'TEAM', 'team', 'tEam', ' team', 'teaM', 'team'].map((local) =>
      h.request(other.apiKey, 'POST', '/addresses', { address: `${local}@Example.org` }),
    ),
  );
  t.same(
    same.map((r) => r.statusCode).sort(),
    [201, 409, 409, 409, 409, 409, 409, 409],
    'eight creates of one local part, in any case: one winner',
  );
  t.ok(same.filter((r) => r.statusCode === 409).every((r) => r.json().error.code === 'address_unavailable'));
  t.same(await listed(h, other.apiKey, '/addresses'), ['team@example.org'], 'the losers left nothing behind');
});

t.test('addresses: paging with rows added between pages; foreign and malformed ids', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const stranger = await h.workspace();
  const domainId = await domain(h, ws, 'example.com');
  for (const l of ['b', 'd', 'f', 'h']) await create(h, ws.apiKey, `${l}@example.com`);
  const page1 = (await h.request(ws.apiKey, 'GET', '/addresses?limit=2')).json();
  t.same(
    page1.data.map((a: { address: string }) => a.address),
    ['b@example.com', 'd@example.com'],
  );
  t.equal(page1.hasMore, true);
  await create(h, ws.apiKey, 'a@example.com');
  await create(h, ws.apiKey, 'e@example.com');
  const page2 = (await h.request(ws.apiKey, 'GET', `/addresses?limit=2&cursor=${page1.nextCursor}`)).json();
  t.same(
    page2.data.map((a: { address: string }) => a.address),
    ['e@example.com', 'f@example.com'],
    'a row before the cursor is not shown again; one after it is',
  );
  const page3 = (await h.request(ws.apiKey, 'GET', `/addresses?limit=2&cursor=${page2.nextCursor}`)).json();
  t.same(
    [page3.data.map((a: { address: string }) => a.address), page3.hasMore, page3.nextCursor],
    [['h@example.com'], false, null],
  );
  t.same(
    errorOf(await h.request(ws.apiKey, 'GET', `/domains/${domainId}/addresses?cursor=${page1.nextCursor}`)),
    [400, 'invalid_cursor', 'cursor'],
    "another list's cursor",
  );
  t.same(errorOf(await h.request(stranger.apiKey, 'GET', `/addresses?cursor=${page1.nextCursor}`)), [
    400,
    'invalid_cursor',
    'cursor',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/addresses?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.equal((await h.request(ws.apiKey, 'GET', '/addresses?limit=100')).statusCode, 200);

  const mine = (await h.request(ws.apiKey, 'GET', '/addresses?limit=1')).json().data[0];
  for (const [method, url, body] of [
    ['GET', `/addresses/${mine.id}`],
    ['PATCH', `/addresses/${mine.id}`, { enabled: false }],
    ['PATCH', `/addresses/${mine.id}`, { timeZone: 'Asia/Tokyo' }],
    ['DELETE', `/addresses/${mine.id}`],
    ['POST', `/addresses/${mine.id}/forwards`, { destinations: ['x@elsewhere.org'] }],
    ['GET', `/domains/${domainId}/addresses`],
  ] as const) {
    t.same(
      errorOf(await h.request(stranger.apiKey, method, url, body)),
      [404, 'resource_not_found', 'id'],
      `${method} ${url}`,
    );
  }
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/addresses/addr_nope')), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/domains/not-a-uuid/addresses')), [
    404,
    'resource_not_found',
    'id',
  ]);
  t.match(
    (await h.request(ws.apiKey, 'GET', `/addresses/${mine.id}`)).json(),
    { enabled: true, timeZone: 'UTC' },
    'nothing changed',
  );
});

t.test('addresses: narrowed keys see and change only what their lists reach; test keys and scopes', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const com = await domain(h, ws, 'example.com');
  await domain(h, ws, 'example.org');
  const a = await create(h, ws.apiKey, 'a@example.com');
  const b = await create(h, ws.apiKey, 'b@example.org');
  const scopes = ['domains:read', 'domains:write'];
  const byDomain = await keyWith(h, ws.apiKey, { scopes, domainAllowlist: ['example.com'] });
  const byAddress = await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['later@example.org'] });

  t.same(await listed(h, byDomain, '/addresses'), ['a@example.com']);
  t.equal((await h.request(byDomain, 'GET', `/addresses/${a.id}`)).statusCode, 200);
  for (const [method, url, body] of [
    ['GET', `/addresses/${b.id}`],
    ['PATCH', `/addresses/${b.id}`, { enabled: false }],
    ['DELETE', `/addresses/${b.id}`],
  ] as const) {
    t.same(
      errorOf(await h.request(byDomain, method, url, body)),
      [404, 'resource_not_found', 'id'],
      `${method} unreached`,
    );
  }
  const later = await h.request(byDomain, 'POST', '/addresses', { address: 'new@example.com' });
  t.equal(later.statusCode, 201, 'a domain entry reaches addresses created later');
  t.same(await listed(h, byDomain, '/addresses'), ['a@example.com', 'new@example.com']);
  t.same(errorOf(await h.request(byDomain, 'POST', '/addresses', { address: 'x@example.org' })), [
    422,
    'capability_unsupported',
    'address',
  ]);
  t.same(await listed(h, byDomain, `/domains/${com}/addresses`), ['a@example.com', 'new@example.com']);

  t.same(await listed(h, byAddress, '/addresses'), [], 'its address does not exist yet');
  t.same(errorOf(await h.request(byAddress, 'POST', '/addresses', { address: 'other@example.org' })), [
    422,
    'capability_unsupported',
    'address',
  ]);
  const its = await h.request(byAddress, 'POST', '/addresses', { address: 'later@example.org' });
  t.equal(its.statusCode, 201);
  t.same(await listed(h, byAddress, '/addresses'), ['later@example.org']);
  t.equal((await h.request(byAddress, 'DELETE', `/addresses/${its.json().id}`)).statusCode, 200);

  const testKey = await keyWith(h, ws.apiKey, { scopes, mode: 'test' });
  t.equal((await h.request(testKey, 'GET', '/addresses')).statusCode, 200, 'test keys read the shared configuration');
  t.same(errorOf(await h.request(testKey, 'POST', '/addresses', { address: 't@example.com' })), [
    403,
    'beyond_caller_authority',
    null,
  ]);
  const reader = await keyWith(h, ws.apiKey, { scopes: ['domains:read'] });
  t.same(errorOf(await h.request(reader, 'POST', '/addresses', { address: 'r@example.com' })), [
    403,
    'insufficient_scope',
    null,
  ]);
  const none = await keyWith(h, ws.apiKey, { scopes: ['emails:send'] });
  t.same(errorOf(await h.request(none, 'GET', '/addresses')), [403, 'insufficient_scope', null]);

  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  for (const [path, method] of [
    ['/addresses/{id}', 'patch'],
    ['/addresses/{id}', 'delete'],
    ['/addresses/{id}/forwards', 'post'],
    ['/addresses/{id}/forwards/{forwardId}', 'patch'],
    ['/addresses/{id}/forwards/{forwardId}', 'delete'],
    ['/addresses/{id}/forwards/{forwardId}/resend-consent', 'post'],
    ['/addresses/{id}/login', 'put'],
    ['/addresses/{id}/app-passwords', 'post'],
  ] as const) {
    t.match(doc.paths[path][method].description, /step_up_required/, `step-up: ${method} ${path}`);
  }
  t.notMatch(doc.paths['/addresses'].post.description, /step_up_required/, 'create is not on the list');
});

t.test('the domain read lists its addresses; a domain is deleted only without them', async (t) => {
  const { h } = await startDomainsApp(t);
  const ws = await h.workspace();
  const d = await addDomainOverHttp(h, ws.apiKey, 'example.com');
  const a = await create(h, ws.apiKey, 'b@example.com');
  await create(h, ws.apiKey, 'a@example.com', { enabled: false });
  const read = async (key = ws.apiKey) => (await h.request(key, 'GET', `/domains/${d.id}`)).json();
  t.same((await read()).addresses, [
    { address: 'a@example.com', enabled: false },
    { address: 'b@example.com', enabled: true },
  ]);
  const on = await h.request(ws.apiKey, 'PATCH', `/domains/${d.id}`, { catchAll: true });
  t.same(
    on.json().addresses.map((x: { address: string }) => x.address),
    ['*@example.com', 'a@example.com', 'b@example.com'],
    'the catch-all, while catchAll is on',
  );
  const narrowed = await keyWith(h, ws.apiKey, { scopes: ['domains:read'], addressAllowlist: ['b@example.com'] });
  t.same((await read(narrowed)).addresses, [{ address: 'b@example.com', enabled: true }], 'only what a key reaches');
  const whole = await keyWith(h, ws.apiKey, { scopes: ['domains:read'], domainAllowlist: ['example.com'] });
  t.equal((await read(whole)).addresses.length, 3, 'the catch-all with the whole domain');
  await h.request(ws.apiKey, 'PATCH', `/domains/${d.id}`, { catchAll: false });
  t.equal((await read()).addresses.length, 2);

  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/domains/${d.id}`)), [409, 'domain_has_addresses', null]);
  t.equal((await h.request(ws.apiKey, 'GET', `/addresses/${a.id}`)).statusCode, 200, 'nothing changed');
  for (const x of (await h.request(ws.apiKey, 'GET', '/addresses')).json().data)
    await h.request(ws.apiKey, 'DELETE', `/addresses/${x.id}`);
  // A create racing the deletion: either it lands first and the deletion is refused, or the
  // domain is closed first and the create is refused; never an address on a deleted domain.
  const [created, deleted] = await Promise.all([
    h.request(ws.apiKey, 'POST', '/addresses', { address: 'c@example.com' }),
    h.request(ws.apiKey, 'DELETE', `/domains/${d.id}`),
  ]);
  t.ok(
    (created.statusCode === 201 && deleted.statusCode === 409) ||
      (created.statusCode === 422 && created.json().error.code === 'unknown_domain' && deleted.statusCode === 200),
    `one or the other (${created.statusCode}, ${deleted.statusCode})`,
  );
  if (created.statusCode === 201) {
    await h.request(ws.apiKey, 'DELETE', `/addresses/${created.json().id}`);
    t.equal((await h.request(ws.apiKey, 'DELETE', `/domains/${d.id}`)).statusCode, 200);
  }
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/addresses', { address: 'e@example.com' })), [
    422,
    'unknown_domain',
    'address',
  ]);
  t.same(await listed(h, ws.apiKey, '/addresses'), []);
  const again = await addDomainOverHttp(h, ws.apiKey, 'example.com');
  t.equal((await create(h, ws.apiKey, 'e@example.com')).domainId, again.id, 'the name added again takes addresses');
});
