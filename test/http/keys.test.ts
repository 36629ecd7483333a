import t from 'tap';
import { startTestApp, type TestApp } from '../support/app.ts';
import { RateLimitClock } from '../support/clock.ts';

const TOKEN = /^wms_(live|test)_[0-9a-z]{24}_[A-Za-z0-9_-]{43}$/;

async function newKey(h: TestApp, owner: string, body: Record<string, unknown>) {
  const res = await h.request(owner, 'POST', '/keys', body);
  return res;
}

t.test('API keys over HTTP', async (t) => {
  // Admission reads the time from the rate limiter's clock: the expiry test moves it on.
  const clock = new RateLimitClock();
  const h = await startTestApp(t, { rateLimitNow: clock.now });
  const ws = await h.workspace();
  const other = await h.workspace();

  t.test('create: token shape, shown once, works at once, listed without secrets', async (t) => {
    const res = await newKey(h, ws.apiKey, { name: 'ci', scopes: ['settings:read', 'emails:send'] });
    t.equal(res.statusCode, 201);
    const key = res.json();
    t.match(key.token, TOKEN);
    t.equal(key.token.split('_')[2], key.id);
    t.same(key.scopes, ['emails:send', 'settings:read']);
    t.equal(key.roleId, null);
    const ping = await h.request(key.token, 'GET', '/ping');
    t.equal(ping.statusCode, 200);
    t.same(ping.json().scopes, ['emails:send', 'settings:read']);
    const read = await h.request(ws.apiKey, 'GET', `/keys/${key.id}`);
    t.equal(read.statusCode, 200);
    t.notOk('token' in read.json());
    // The secret is the last 43 characters (base64url, so it may hold `_` itself).
    t.notOk(JSON.stringify(read.json()).includes(key.token.slice(-43)));
    const list = await h.request(ws.apiKey, 'GET', '/keys');
    t.ok(list.json().data.some((k: { id: string }) => k.id === key.id));
    t.notOk(list.body.includes('secret'));
  });

  t.test('create: allowlists normalised; an address on an allowlisted domain is dropped', async (t) => {
    const res = await newKey(h, ws.apiKey, {
      scopes: ['emails:send'],
      addressAllowlist: ['Ann@Example.com', 'bob@other.org', 'BOB@other.org'],
      domainAllowlist: ['EXAMPLE.com'],
    });
    t.equal(res.statusCode, 201);
    t.same(res.json().addressAllowlist, ['bob@other.org']);
    t.same(res.json().domainAllowlist, ['example.com']);
    const self = await h.request(res.json().token, 'GET', '/keys/self');
    t.same(self.json().addressAllowlist, ['bob@other.org']);
  });

  t.test('create: never wider than the caller', async (t) => {
    const narrow = (
      await newKey(h, ws.apiKey, { scopes: ['keys:manage', 'emails:send'], domainAllowlist: ['example.com'] })
    ).json().token;
    const wider = await newKey(h, narrow, { scopes: ['emails:send', 'emails:read'], domainAllowlist: ['example.com'] });
    t.equal(wider.statusCode, 403);
    t.match(wider.json().error, { type: 'permission_error', code: 'beyond_caller_authority', param: 'scopes.1' });
    const unrestricted = await newKey(h, narrow, { scopes: ['emails:send'] });
    t.match(unrestricted.json().error, { code: 'beyond_caller_authority', param: 'addressAllowlist' });
    const otherDomain = await newKey(h, narrow, { scopes: ['emails:send'], addressAllowlist: ['x@elsewhere.org'] });
    t.match(otherDomain.json().error, { code: 'beyond_caller_authority', param: 'addressAllowlist.0' });
    t.equal(
      (await newKey(h, narrow, { scopes: ['emails:send'], addressAllowlist: ['x@example.com'] })).statusCode,
      201,
    );
    const testKey = (await newKey(h, ws.apiKey, { scopes: ['keys:manage'], mode: 'test' })).json().token;
    t.match(testKey, /^wms_test_/);
    t.match((await newKey(h, testKey, { scopes: ['keys:manage'], mode: 'live' })).json().error, {
      code: 'beyond_caller_authority',
      param: 'mode',
    });
    t.match((await newKey(h, testKey, { scopes: ['keys:manage'] })).json().token, /^wms_test_/);
  });

  t.test('create: validation', async (t) => {
    const consoleOnly = await newKey(h, ws.apiKey, { scopes: ['billing:read'] });
    t.equal(consoleOnly.statusCode, 422);
    t.match(consoleOnly.json().error, { code: 'invalid_parameter', param: 'scopes.0' });
    t.match((await newKey(h, ws.apiKey, { scopes: ['emails:send', 'nope'] })).json().error, {
      code: 'invalid_parameter',
      param: 'scopes.1',
    });
    t.match((await newKey(h, ws.apiKey, { scopes: ['emails:send'], colour: 'red' })).json().error, {
      code: 'unknown_parameter',
      param: 'colour',
    });
    t.match((await newKey(h, ws.apiKey, {})).json().error, { code: 'invalid_parameter', param: 'scopes' });
    t.match((await newKey(h, ws.apiKey, { scopes: [], expiresAt: '2001-01-01T00:00:00Z' })).json().error, {
      code: 'invalid_parameter',
      param: 'expiresAt',
    });
    t.match((await newKey(h, ws.apiKey, { scopes: [], addressAllowlist: ['not-an-address'] })).json().error, {
      code: 'invalid_parameter',
      param: 'addressAllowlist.0',
    });
    t.match((await newKey(h, ws.apiKey, { scopes: [], roleId: 'role_000000000000000000000000' })).json().error, {
      code: 'role_not_found',
      param: 'roleId',
    });
  });

  t.test('scopes are checked: 403 insufficient_scope names the scope', async (t) => {
    const reader = (await newKey(h, ws.apiKey, { scopes: ['keys:read'] })).json().token;
    const res = await newKey(h, reader, { scopes: [] });
    t.equal(res.statusCode, 403);
    t.match(res.json().error, { type: 'permission_error', code: 'insufficient_scope' });
    t.match(res.json().error.message, /keys:manage/);
    t.equal((await h.request(reader, 'GET', '/keys')).statusCode, 200);
  });

  t.test('revoke: dead at once, then 404; foreign ids 404', async (t) => {
    const key = (await newKey(h, ws.apiKey, { scopes: ['emails:send'] })).json();
    const foreign = await h.request(other.apiKey, 'DELETE', `/keys/${key.id}`);
    t.equal(foreign.statusCode, 404);
    t.equal((await h.request(other.apiKey, 'GET', `/keys/${key.id}`)).statusCode, 404);
    const del = await h.request(ws.apiKey, 'DELETE', `/keys/${key.id}`);
    t.equal(del.statusCode, 200);
    t.same(del.json(), { object: 'api_key', id: key.id, deleted: true });
    const after = await h.request(key.token, 'GET', '/ping');
    t.equal(after.statusCode, 401);
    t.equal(after.json().error.code, 'revoked_api_key');
    t.equal((await h.request(ws.apiKey, 'DELETE', `/keys/${key.id}`)).statusCode, 404);
    t.equal((await h.request(ws.apiKey, 'GET', `/keys/${key.id}`)).statusCode, 404);
  });

  t.test("revoke: only keys inside the caller's authority; a test key never touches live keys", async (t) => {
    const fresh = await h.workspace();
    const wide = (await newKey(h, fresh.apiKey, { scopes: ['keys:manage', 'keys:read', 'emails:send'] })).json();
    const narrowTest = (
      await newKey(h, fresh.apiKey, { scopes: ['keys:manage'], mode: 'test', addressAllowlist: ['a@example.com'] })
    ).json();
    const ownerId = fresh.apiKey.split('_')[2];
    for (const [id, what] of [
      [wide.id, 'a wide live key'],
      [ownerId, "the owner's key"],
    ]) {
      const refused = await h.request(narrowTest.token, 'DELETE', `/keys/${id}`);
      t.equal(refused.statusCode, 403, what);
      t.match(refused.json().error, { type: 'permission_error', code: 'beyond_caller_authority', param: 'id' });
    }
    const narrowLive = (
      await newKey(h, fresh.apiKey, { scopes: ['keys:manage'], addressAllowlist: ['a@example.com'] })
    ).json();
    t.match(
      (await h.request(narrowTest.token, 'DELETE', `/keys/${narrowLive.id}`)).json().error,
      { code: 'beyond_caller_authority', param: 'id' },
      'nor a live key as narrow as itself',
    );
    t.match(
      (await h.request(wide.token, 'DELETE', `/keys/${ownerId}`)).json().error,
      { code: 'beyond_caller_authority', param: 'id' },
      'a live key holding fewer scopes than the owner key',
    );
    t.equal((await h.request(fresh.apiKey, 'GET', '/ping')).statusCode, 200, 'the owner key still works');
    t.equal((await h.request(wide.token, 'GET', '/ping')).statusCode, 200, 'and the wide one');

    const madeByTest = (
      await newKey(h, narrowTest.token, { scopes: ['keys:manage'], addressAllowlist: ['a@example.com'] })
    ).json();
    t.equal(
      (await h.request(narrowTest.token, 'DELETE', `/keys/${madeByTest.id}`)).statusCode,
      200,
      'a test key revokes a test key inside its authority',
    );
    t.equal(
      (await h.request(narrowLive.token, 'DELETE', `/keys/${narrowTest.id}`)).statusCode,
      200,
      'a live key revokes a test key inside its authority',
    );
    t.equal(
      (await h.request(fresh.apiKey, 'DELETE', `/keys/${wide.id}`)).statusCode,
      200,
      "the owner's key revokes any",
    );
    t.equal(
      (await h.request(narrowLive.token, 'DELETE', `/keys/${narrowLive.id}`)).statusCode,
      200,
      'every key may revoke itself',
    );
  });

  t.test('expired key: 401 expired_api_key', async (t) => {
    const key = (
      await newKey(h, ws.apiKey, { scopes: [], expiresAt: new Date(Date.now() + 1500).toISOString() })
    ).json();
    t.equal((await h.request(key.token, 'GET', '/ping')).statusCode, 200);
    clock.advance(1600);
    const res = await h.request(key.token, 'GET', '/ping');
    t.equal(res.statusCode, 401);
    t.equal(res.json().error.code, 'expired_api_key');
  });

  t.test('authentication failures', async (t) => {
    const missing = await h.request(null, 'GET', '/ping');
    t.equal(missing.statusCode, 401);
    t.match(missing.json().error, { type: 'authentication_error', code: 'missing_api_key' });
    t.equal((await h.request('garbage', 'GET', '/ping')).json().error.code, 'invalid_api_key');
    const [prefix, mode, id] = ws.apiKey.split('_');
    const wrongSecret = `${prefix}_${mode}_${id}_${'A'.repeat(43)}`;
    t.equal((await h.request(wrongSecret, 'GET', '/ping')).json().error.code, 'invalid_api_key');
    t.equal(
      (await h.request(`${prefix}_test_${id}_${ws.apiKey.slice(-43)}`, 'GET', '/ping')).json().error.code,
      'invalid_api_key',
      'the right secret under the wrong mode',
    );
    const basic = await h.app.inject({ method: 'GET', url: '/ping', headers: { authorization: `Basic ${ws.apiKey}` } });
    t.equal(basic.json().error.code, 'missing_api_key');
  });

  t.test('rotate: new token, old one dead at once, same key', async (t) => {
    const key = (
      await newKey(h, ws.apiKey, { scopes: ['keys:write', 'emails:send'], addressAllowlist: ['a@example.com'] })
    ).json();
    const res = await h.request(key.token, 'POST', '/keys/self/rotate');
    t.equal(res.statusCode, 200);
    const rotated = res.json();
    t.match(rotated, {
      object: 'api_key',
      id: key.id,
      rotationCount: 1,
      scopes: ['emails:send', 'keys:write'],
      addressAllowlist: ['a@example.com'],
    });
    t.match(rotated.token, TOKEN);
    t.not(rotated.token, key.token);
    t.ok(!Number.isNaN(Date.parse(rotated.rotatedAt)));
    t.equal((await h.request(key.token, 'GET', '/ping')).json().error.code, 'invalid_api_key');
    t.equal((await h.request(rotated.token, 'GET', '/ping')).statusCode, 200);
    const again = await h.request(rotated.token, 'POST', '/keys/self/rotate');
    t.equal(again.json().rotationCount, 2);
    const noScope = (await newKey(h, ws.apiKey, { scopes: ['emails:send'] })).json().token;
    t.equal((await h.request(noScope, 'POST', '/keys/self/rotate')).json().error.code, 'insufficient_scope');
    t.equal(
      (await h.request(again.json().token, 'POST', '/keys/self/rotate', { extra: 1 })).json().error.code,
      'unknown_parameter',
    );
  });

  t.test('the key request log: own requests only, newest first, filters, no query strings', async (t) => {
    const key = (await newKey(h, ws.apiKey, { scopes: ['keys:read'] })).json().token;
    await h.request(key, 'GET', '/ping');
    await h.request(key, 'GET', '/keys?limit=2');
    await h.request(key, 'POST', '/keys', { scopes: [] });
    await h.request(key, 'GET', '/nowhere');
    const log = await h.request(key, 'GET', '/keys/self/requests');
    t.equal(log.statusCode, 200);
    const rows = log.json().data;
    t.same(
      rows.map((r: { method: string; path: string }) => `${r.method} ${r.path}`),
      ['GET /nowhere', 'POST /keys', 'GET /keys', 'GET /ping'],
    );
    t.match(rows[1], { status: 403, errorCode: 'insufficient_scope', userAgent: 'lightMyRequest', ip: '127.0.0.1' });
    t.notOk(log.body.includes('limit=2'));
    const failed = await h.request(key, 'GET', '/keys/self/requests?failedOnly=true');
    t.same(
      failed.json().data.map((r: { path: string }) => r.path),
      ['/nowhere', '/keys'],
    );
    const byStatus = await h.request(key, 'GET', '/keys/self/requests?statuses=200,201');
    t.same(
      byStatus.json().data.map((r: { path: string }) => r.path),
      ['/keys/self/requests', '/keys/self/requests', '/keys', '/ping'],
    );
    const byPath = await h.request(key, 'GET', '/keys/self/requests?path=/ping');
    t.same(
      byPath.json().data.map((r: { path: string }) => r.path),
      ['/ping'],
    );
    const combined = await h.request(
      key,
      'GET',
      `/keys/self/requests?failedOnly=true&statuses=403,404&path=/keys&since=${encodeURIComponent(new Date(Date.now() - 60_000).toISOString())}&until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
    );
    t.same(
      combined.json().data.map((r: { method: string; path: string }) => `${r.method} ${r.path}`),
      ['POST /keys'],
      'filters combine (AND)',
    );
    const excluded = await h.request(key, 'GET', '/keys/self/requests?failedOnly=true&path=/ping');
    t.same(excluded.json().data, [], 'failedOnly and path together: /ping never failed');
    const future = await h.request(
      key,
      'GET',
      `/keys/self/requests?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`,
    );
    t.same(future.json().data, []);
    const until = await h.request(
      key,
      'GET',
      `/keys/self/requests?until=${encodeURIComponent('2000-01-01T00:00:00Z')}`,
    );
    t.same(until.json().data, []);
    const page1 = (await h.request(key, 'GET', '/keys/self/requests?limit=2')).json();
    t.equal(page1.hasMore, true);
    const page2 = (await h.request(key, 'GET', `/keys/self/requests?limit=2&cursor=${page1.nextCursor}`)).json();
    t.equal(page2.data[0].requestId !== page1.data[1].requestId, true);
    const ownerLog = (await h.request(ws.apiKey, 'GET', '/keys/self/requests?limit=100')).json().data;
    t.notOk(
      ownerLog.some((r: { path: string }) => r.path === '/nowhere'),
      "another key's requests never show",
    );
    t.equal((await h.request(key, 'GET', '/keys/self/requests?statuses=abc')).json().error.param, 'statuses.0');
  });

  t.test('the request log is written after the answer, with no reader asking for it', async (t) => {
    const key = (await newKey(h, ws.apiKey, { scopes: [] })).json();
    const res = await h.request(key.token, 'GET', '/ping');
    const logged = async () =>
      (
        await h.system.database.pool.query('SELECT request_id, status FROM api_key_requests WHERE key_id = $1', [
          key.id,
        ])
      ).rows;
    const deadline = Date.now() + 5000;
    while ((await logged()).length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    t.same(await logged(), [{ request_id: res.headers['request-id'], status: 200 }]);
  });

  t.test('list pages across keys added between pages', async (t) => {
    const fresh = await h.workspace();
    for (let i = 0; i < 4; i++) await newKey(h, fresh.apiKey, { scopes: [], name: `k${i}` });
    const first = (await h.request(fresh.apiKey, 'GET', '/keys?limit=2')).json();
    t.equal(first.data.length, 2);
    await newKey(h, fresh.apiKey, { scopes: [], name: 'added-between' });
    const seen = [...first.data.map((k: { name: string }) => k.name)];
    let cursor = first.nextCursor;
    while (cursor) {
      const page = (await h.request(fresh.apiKey, 'GET', `/keys?limit=2&cursor=${cursor}`)).json();
      seen.push(...page.data.map((k: { name: string }) => k.name));
      cursor = page.nextCursor;
    }
    t.same(
      seen,
      ['k3', 'k2', 'k1', 'k0', 'Owner key'],
      'newest first, each older key once, the added one is before the walk',
    );
    const foreignCursor = await h.request(ws.apiKey, 'GET', `/keys?cursor=${first.nextCursor}`);
    t.equal(foreignCursor.statusCode, 400);
    t.match(foreignCursor.json().error, { code: 'invalid_cursor', param: 'cursor' });
  });

  t.test('20 active keys per workspace', async (t) => {
    const fresh = await h.workspace();
    const made: string[] = [];
    for (let i = 0; i < 19; i++) {
      const res = await newKey(h, fresh.apiKey, { scopes: [] });
      t.equal(res.statusCode, 201);
      made.push(res.json().id);
    }
    const over = await newKey(h, fresh.apiKey, { scopes: [] });
    t.equal(over.statusCode, 422);
    t.match(over.json().error, { type: 'validation_error', code: 'workspace_limit_reached' });
    await h.request(fresh.apiKey, 'DELETE', `/keys/${made[0]}`);
    const race = await Promise.all([1, 2, 3, 4].map(() => newKey(h, fresh.apiKey, { scopes: [] })));
    t.same(
      race.map((r) => r.statusCode).sort(),
      [201, 422, 422, 422],
      'one free place, four concurrent creates: one wins',
    );
  });
});
