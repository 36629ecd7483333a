import t from 'tap';
import { openSystem, serve } from '../../system.ts';
import { startTestApp } from '../support/app.ts';
import { RateLimitClock } from '../support/clock.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

/** The service once more on the same database, as another server process runs it. */
async function secondServer(t: { teardown(fn: () => Promise<void>): void }, url: string, clock: RateLimitClock) {
  const system = await openSystem(url, { secretsKey: TEST_SECRETS_KEY, rateLimitNow: clock.now });
  const app = await serve(system);
  t.teardown(async () => {
    await app.close();
    await system.close();
  });
  return app;
}

t.test('wire contract', async (t) => {
  const clock = new RateLimitClock();
  const h = await startTestApp(t, { rateLimitNow: clock.now });
  const ws = await h.workspace();

  t.test('a request id on every answer, successes and errors alike', async (t) => {
    const ok = await h.request(ws.apiKey, 'GET', '/ping');
    t.match(ok.headers['request-id'], /^req_[0-9a-f]{24}$/);
    const bad = await h.request(null, 'GET', '/ping');
    t.match(bad.headers['request-id'], /^req_/);
    t.equal(bad.json().error.requestId, bad.headers['request-id']);
    t.not(ok.headers['request-id'], bad.headers['request-id']);
    const forged = await h.app.inject({ method: 'GET', url: '/ping', headers: { 'request-id': 'req_mine' } });
    t.not(forged.headers['request-id'], 'req_mine');
  });

  t.test('the error envelope and its docUrl', async (t) => {
    const res = await h.request(null, 'GET', '/ping');
    const error = res.json().error;
    t.same(Object.keys(error).sort(), ['code', 'docUrl', 'message', 'param', 'requestId', 'type']);
    t.match(error.docUrl, /\/docs\/errors#missing_api_key$/);
    const docs = await h.app.inject({ method: 'GET', url: '/docs/errors' });
    t.equal(docs.statusCode, 200);
    t.match(docs.body, /<tr id="missing_api_key">/);
  });

  t.test('unknown routes answer JSON 404', async (t) => {
    const res = await h.request(ws.apiKey, 'GET', '/no/such/route');
    t.equal(res.statusCode, 404);
    t.match(res.headers['content-type'], /application\/json/);
    t.match(res.json().error, { type: 'not_found_error', code: 'resource_not_found' });
    t.ok(res.headers['ratelimit-limit']);
  });

  t.test('malformed JSON is 400 malformed_json', async (t) => {
    const res = await h.request(ws.apiKey, 'POST', '/keys', '{"scopes": [');
    t.equal(res.statusCode, 400);
    t.match(res.json().error, { type: 'invalid_request_error', code: 'malformed_json' });
    const empty = await h.app.inject({
      method: 'POST',
      url: '/keys',
      payload: '',
      headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/json' },
    });
    t.equal(empty.json().error.code, 'malformed_json');
  });

  t.test('bodies: too large is 413, a content type we do not read is 400', async (t) => {
    const big = await h.request(ws.apiKey, 'POST', '/keys', JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }));
    t.equal(big.statusCode, 413);
    t.match(big.json().error, { type: 'invalid_request_error', code: 'body_too_large' });
    const xml = await h.app.inject({
      method: 'POST',
      url: '/keys',
      payload: '<key/>',
      headers: { authorization: `Bearer ${ws.apiKey}`, 'content-type': 'application/xml' },
    });
    t.equal(xml.statusCode, 400);
    t.match(xml.json().error, { type: 'invalid_request_error', code: 'invalid_request' });
  });

  t.test('zod failures: 422 with dotted, indexed params; unknown fields named', async (t) => {
    const res = await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['emails:send', 42] });
    t.equal(res.statusCode, 422);
    t.match(res.json().error, { type: 'validation_error', code: 'invalid_parameter', param: 'scopes.1' });
    const unknown = await h.request(ws.apiKey, 'POST', '/keys', { scopes: [], nested: { x: 1 } });
    t.match(unknown.json().error, { code: 'unknown_parameter', param: 'nested' });
    const unknownQuery = await h.request(ws.apiKey, 'GET', '/keys?limt=5');
    t.match(unknownQuery.json().error, { code: 'unknown_parameter', param: 'limt' });
  });

  t.test('limits: 1 to 100, default 25', async (t) => {
    for (const bad of ['0', '101', '-1', '2.5', 'ten']) {
      const res = await h.request(ws.apiKey, 'GET', `/keys?limit=${bad}`);
      t.equal(res.statusCode, 422, `limit=${bad}`);
      t.equal(res.json().error.param, 'limit');
    }
    t.equal((await h.request(ws.apiKey, 'GET', '/keys?limit=1')).statusCode, 200);
    t.equal((await h.request(ws.apiKey, 'GET', '/keys?limit=100')).statusCode, 200);
  });

  t.test('cursors: tampered, or from another list, are 400 invalid_cursor', async (t) => {
    await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] });
    const page = (await h.request(ws.apiKey, 'GET', '/keys?limit=1')).json();
    t.ok(page.nextCursor);
    const [body, sig] = page.nextCursor.split('.');
    const decoded = JSON.parse(Buffer.from(body, 'base64url').toString());
    decoded.k[1] = 'zzzz';
    const tampered = `${Buffer.from(JSON.stringify(decoded)).toString('base64url')}.${sig}`;
    for (const cursor of [tampered, 'garbage', `${body}.${sig}x`, `${body}`]) {
      const res = await h.request(ws.apiKey, 'GET', `/keys?cursor=${encodeURIComponent(cursor)}`);
      t.equal(res.statusCode, 400);
      t.match(res.json().error, { type: 'invalid_request_error', code: 'invalid_cursor', param: 'cursor' });
    }
    const otherList = await h.request(ws.apiKey, 'GET', `/keys/self/requests?cursor=${page.nextCursor}`);
    t.equal(otherList.json().error.code, 'invalid_cursor');
  });

  t.test('/openapi.json is generated from the route schemas', async (t) => {
    const res = await h.app.inject({ method: 'GET', url: '/openapi.json' });
    t.equal(res.statusCode, 200);
    const doc = res.json();
    t.equal(doc.openapi, '3.1.0');
    for (const path of ['/ping', '/keys/self', '/keys/self/rotate', '/keys/self/requests', '/keys', '/keys/{id}'])
      t.ok(doc.paths[path], path);
    const body = doc.paths['/keys'].post.requestBody.content['application/json'].schema;
    t.ok(body.properties.scopes);
    t.equal(body.additionalProperties, false);
    t.ok(doc.components.securitySchemes.bearerAuth);
  });

  t.test('rate limit: headers on every answer, 429 past 600 a minute', async (t) => {
    clock.awayFromMinuteEnd();
    const key = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json().token;
    const first = await h.request(key, 'GET', '/ping');
    t.equal(first.headers['ratelimit-policy'], '600;w=60');
    t.equal(first.headers['ratelimit-limit'], '600');
    t.equal(first.headers['ratelimit-remaining'], '599');
    const reset = Number(first.headers['ratelimit-reset']);
    t.ok(reset >= 1 && reset <= 60);
    t.notOk(first.headers['retry-after']);
    for (let i = 0; i < 598; i++) await h.request(key, 'GET', '/ping');
    const last = await h.request(key, 'GET', '/ping');
    t.equal(last.statusCode, 200);
    t.equal(last.headers['ratelimit-remaining'], '0');
    const over = await h.request(key, 'GET', '/ping');
    t.equal(over.statusCode, 429);
    t.match(over.json().error, { type: 'rate_limit_error', code: 'rate_limited' });
    t.ok(Number(over.headers['retry-after']) >= 1);
    t.equal(over.headers['ratelimit-remaining'], '0');
    t.equal((await h.request(ws.apiKey, 'GET', '/ping')).statusCode, 200, 'other keys keep their own window');
  });

  t.test('rate limit: requests at once share statements and each still takes its own place', async (t) => {
    clock.awayFromMinuteEnd();
    const key = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json().token as string;
    const other = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json().token as string;
    const forged = `${key.slice(0, -43)}${'D'.repeat(43)}`;
    const tokens = Array.from({ length: 60 }, (_, i) => (i % 3 === 0 ? key : i % 3 === 1 ? other : forged));
    const answers = await Promise.all(tokens.map((token) => h.request(token, 'GET', '/ping')));
    const remaining = (token: string) =>
      answers
        .filter((_, i) => tokens[i] === token)
        .map((res) => Number(res.headers['ratelimit-remaining']))
        .sort((a, b) => b - a);
    const places = Array.from({ length: 20 }, (_, i) => 599 - i);
    t.same(remaining(key), places, "the key's requests took consecutive places, none twice");
    t.same(remaining(other), places, 'the other key counted apart');
    t.ok(
      answers.filter((_, i) => tokens[i] === forged).every((res) => res.json().error.code === 'invalid_api_key'),
      'a wrong secret refused among them',
    );
    const { rows } = await h.system.database.pool.query(
      'SELECT count FROM rate_limit_windows WHERE identity = $1 AND window_start = $2',
      [`key:${key.split('_')[2]}`, clock.windowStart()],
    );
    t.equal(rows[0]?.count, 20, 'the window holds every request once');
  });

  t.test("rate limit: a wrong secret never spends the key's allowance", async (t) => {
    clock.awayFromMinuteEnd();
    const key = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json().token as string;
    t.equal((await h.request(key, 'GET', '/ping')).headers['ratelimit-remaining'], '599');
    const forged = `${key.slice(0, -43)}${'B'.repeat(43)}`;
    for (let i = 0; i < 5; i++) {
      const res = await h.request(forged, 'GET', '/ping');
      t.equal(res.json().error.code, 'invalid_api_key');
      t.ok(res.headers['ratelimit-limit'], 'a refused request carries the headers too');
    }
    t.equal((await h.request(key, 'GET', '/ping')).headers['ratelimit-remaining'], '598');
  });

  t.test(
    'rate limit: unknown key ids, wrong secrets and dead keys are counted by address, never under a key',
    async (t) => {
      clock.awayFromMinuteEnd();
      const windowStart = clock.windowStart();
      const counts = async () =>
        new Map<string, number>(
          (
            await h.system.database.pool.query(
              'SELECT identity, count FROM rate_limit_windows WHERE window_start = $1',
              [windowStart],
            )
          ).rows.map((r) => [r.identity, r.count]),
        );
      const live = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json();
      const dead = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json();
      t.equal((await h.request(ws.apiKey, 'DELETE', `/keys/${dead.id}`)).statusCode, 200);
      const unknownId = 'q'.repeat(24);
      const before = await counts();
      const refusals: [string, string][] = [
        [`wms_live_${unknownId}_${'A'.repeat(43)}`, 'invalid_api_key'],
        [`wms_live_${unknownId}_${'B'.repeat(43)}`, 'invalid_api_key'],
        [`${live.token.slice(0, -43)}${'C'.repeat(43)}`, 'invalid_api_key'],
        [live.token.replace('wms_live_', 'wms_test_'), 'invalid_api_key'],
        [dead.token, 'revoked_api_key'],
        ['wms_live_short', 'invalid_api_key'],
      ];
      for (const [token, code] of refusals) {
        const res = await h.request(token, 'GET', '/ping');
        t.equal(res.statusCode, 401);
        t.equal(res.json().error.code, code);
        t.equal(res.headers['ratelimit-limit'], '600');
      }
      const after = await counts();
      t.notOk(after.has(`key:${unknownId}`), 'an unknown key id makes no counter row');
      t.notOk(after.has(`key:${live.id}`), "a wrong secret or mode spends nothing of the key's allowance");
      t.notOk(after.has(`key:${dead.id}`), 'a revoked key is counted by address');
      t.equal(
        after.get('ip:127.0.0.1')! - (before.get('ip:127.0.0.1') ?? 0),
        refusals.length,
        'each refusal counted once, by address',
      );
    },
  );

  t.test('rate limit: one count across several servers on one database', async (t) => {
    const app2 = await secondServer(t, h.url, clock);
    clock.awayFromMinuteEnd();
    const key = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json().token;
    const headers = { authorization: `Bearer ${key}` };
    for (let i = 0; i < 300; i++) {
      await h.app.inject({ method: 'GET', url: '/ping', headers });
      await app2.inject({ method: 'GET', url: '/ping', headers });
    }
    const a = await h.app.inject({ method: 'GET', url: '/ping', headers });
    const b = await app2.inject({ method: 'GET', url: '/ping', headers });
    t.equal(a.statusCode, 429);
    t.equal(b.statusCode, 429);
  });

  t.test('a revocation or a role change through one server applies to the next request on another', async (t) => {
    const app2 = await secondServer(t, h.url, clock);
    const fresh = await h.workspace();
    const ping = (key: string) =>
      app2.inject({ method: 'GET', url: '/ping', headers: { authorization: `Bearer ${key}` } });
    const role = (
      await h.request(fresh.apiKey, 'POST', '/roles', { name: 'Readers', permissions: ['roles:read', 'emails:read'] })
    ).json();
    const key = (
      await h.request(fresh.apiKey, 'POST', '/keys', { scopes: ['roles:read', 'emails:read'], roleId: role.id })
    ).json();
    t.same((await ping(key.token)).json().scopes, ['emails:read', 'roles:read']);
    t.equal(
      (await h.request(fresh.apiKey, 'PATCH', `/roles/${role.id}`, { permissions: ['emails:read'] })).statusCode,
      200,
    );
    t.same((await ping(key.token)).json().scopes, ['emails:read'], 'the narrowed role bounds the key at once');
    t.equal((await h.request(fresh.apiKey, 'DELETE', `/keys/${key.id}`)).statusCode, 200);
    const revoked = await ping(key.token);
    t.equal(revoked.statusCode, 401);
    t.equal(revoked.json().error.code, 'revoked_api_key');
  });
});
