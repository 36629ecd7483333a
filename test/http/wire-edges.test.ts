import t from 'tap';
import { startTestApp } from '../support/app.ts';
import { RateLimitClock } from '../support/clock.ts';

t.test('wire edges', async (t) => {
  const clock = new RateLimitClock();
  const h = await startTestApp(t, { rateLimitNow: clock.now });
  const ws = await h.workspace();
  const newKey = async () =>
    (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json() as { id: string; token: string };
  const windowCounts = async () => {
    const { rows } = await h.system.database.pool.query(
      'SELECT identity, count FROM rate_limit_windows WHERE window_start = $1',
      [clock.windowStart()],
    );
    return new Map<string, number>(rows.map((r) => [r.identity, r.count]));
  };
  const loggedPaths = async (token: string) =>
    (
      (await h.request(token, 'GET', '/keys/self/requests?limit=100')).json().data as {
        method: string;
        path: string;
        status: number;
      }[]
    ).map((r) => `${r.method} ${r.path} ${r.status}`);

  t.test('a valid key on an unknown route or method is counted and logged under the key', async (t) => {
    clock.awayFromMinuteEnd();
    const key = await newKey();
    t.equal((await h.request(key.token, 'GET', '/ping')).headers['ratelimit-remaining'], '599');
    const route = await h.request(key.token, 'GET', '/no/such/route');
    t.equal(route.statusCode, 404);
    t.match(route.json().error, { type: 'not_found_error', code: 'resource_not_found' });
    t.equal(route.headers['ratelimit-remaining'], '598', "the key's window, this request counted");
    const method = await h.request(key.token, 'PUT', '/ping');
    t.equal(method.statusCode, 404);
    t.equal(method.headers['ratelimit-remaining'], '597');
    t.equal((await windowCounts()).get(`key:${key.id}`), 3);
    t.same(await loggedPaths(key.token), ['PUT /ping 404', 'GET /no/such/route 404', 'GET /ping 200']);
  });

  t.test('without a valid credential an unknown route stays 404 and is counted by address', async (t) => {
    clock.awayFromMinuteEnd();
    const key = await newKey();
    const before = await windowCounts();
    const callers = [
      null,
      'wms_live_short',
      `${key.token.slice(0, -43)}${'C'.repeat(43)}`,
      key.token.replace('wms_live_', 'wms_test_'),
    ];
    for (const token of callers) {
      const res = await h.request(token, 'GET', '/no/such/route');
      t.equal(res.statusCode, 404, 'never turned into a 401');
      t.equal(res.json().error.code, 'resource_not_found');
      t.equal(res.headers['ratelimit-limit'], '600');
    }
    const after = await windowCounts();
    t.notOk(after.has(`key:${key.id}`), "a wrong secret or mode spends nothing of the key's allowance");
    t.equal(after.get('ip:127.0.0.1')! - (before.get('ip:127.0.0.1') ?? 0), callers.length);
    t.same(await loggedPaths(key.token), [], 'nothing in the log of the key whose secret was wrong');
  });

  t.test('a path parameter may hold a whole address, longer than the router default of 100', async (t) => {
    const email = `${'a'.repeat(64)}@${'b'.repeat(60)}.${'c'.repeat(60)}.example.com`;
    t.equal((await h.request(ws.apiKey, 'POST', '/contacts', { email })).statusCode, 201);
    const read = await h.request(ws.apiKey, 'GET', `/contacts/${encodeURIComponent(email)}`);
    t.equal(read.statusCode, 200);
    t.equal(read.json().email, email);
  });

  t.test('a URL the router cannot take answers the envelope, with a request id and RateLimit headers', async (t) => {
    clock.awayFromMinuteEnd();
    const key = await newKey();
    const badKey = await h.request(key.token, 'GET', '/keys/%zz');
    t.equal(badKey.statusCode, 400);
    t.match(badKey.headers['content-type'], /application\/json/);
    t.match(badKey.json().error, {
      type: 'invalid_request_error',
      code: 'invalid_request',
      param: null,
      docUrl: /\/docs\/errors#invalid_request$/,
    });
    t.match(badKey.headers['request-id'], /^req_[0-9a-f]{24}$/);
    t.equal(badKey.json().error.requestId, badKey.headers['request-id']);
    t.equal(badKey.headers['ratelimit-policy'], '600;w=60');
    t.equal(badKey.headers['ratelimit-remaining'], '599', 'counted under the key');
    const ipBefore = (await windowCounts()).get('ip:127.0.0.1') ?? 0;
    const anonymous = await h.request(null, 'GET', '/suppressions/%E0');
    t.equal(anonymous.statusCode, 400, 'not a 401: no route was reached');
    t.match(anonymous.json().error, {
      type: 'invalid_request_error',
      code: 'invalid_request',
      requestId: anonymous.headers['request-id'],
    });
    t.equal(anonymous.headers['ratelimit-limit'], '600');
    const tooLong = await h.request(key.token, 'GET', `/keys/${'k'.repeat(401)}`);
    t.equal(tooLong.statusCode, 404);
    t.match(tooLong.json().error, {
      type: 'not_found_error',
      code: 'resource_not_found',
      requestId: tooLong.headers['request-id'],
    });
    t.equal(tooLong.headers['ratelimit-remaining'], '598');
    const counts = await windowCounts();
    t.equal(counts.get(`key:${key.id}`), 2);
    t.equal(counts.get('ip:127.0.0.1')! - ipBefore, 1, 'the anonymous one counted by address');
    const logged = (await h.request(key.token, 'GET', '/keys/self/requests')).json().data;
    t.match(logged, [
      {
        path: `/keys/${'k'.repeat(401)}`,
        status: 404,
        errorCode: 'resource_not_found',
        requestId: tooLong.headers['request-id'],
      },
      { path: '/keys/%zz', status: 400, errorCode: 'invalid_request', requestId: badKey.headers['request-id'] },
    ]);
  });

  t.test('bodies Fastify refuses before the route answer the envelope with the same headers', async (t) => {
    const post = (payload: string, headers: Record<string, string>) =>
      h.app.inject({
        method: 'POST',
        url: '/keys',
        payload,
        headers: { authorization: `Bearer ${ws.apiKey}`, ...headers },
      });
    const cases: [string, Awaited<ReturnType<typeof post>>, number, string][] = [
      ['unsupported type', await post('<key/>', { 'content-type': 'application/xml' }), 400, 'invalid_request'],
      ['no type', await post('{}', { 'content-type': '' }), 400, 'invalid_request'],
      [
        'wrong length',
        await post('{}', { 'content-type': 'application/json', 'content-length': '5' }),
        400,
        'invalid_request',
      ],
      ['not JSON', await post('{"scopes": [', { 'content-type': 'application/json' }), 400, 'malformed_json'],
      [
        'too large',
        await post(JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024) }), { 'content-type': 'application/json' }),
        413,
        'body_too_large',
      ],
    ];
    for (const [label, res, status, code] of cases) {
      t.equal(res.statusCode, status, label);
      t.match(res.json().error, { type: 'invalid_request_error', code, requestId: res.headers['request-id'] }, label);
      t.match(res.headers['request-id'], /^req_/, label);
      t.equal(res.headers['ratelimit-limit'], '600', label);
    }
  });

  t.test('an operation that declares no query parameters refuses any: 422 unknown_parameter naming it', async (t) => {
    const ping = await h.request(ws.apiKey, 'GET', '/ping?x=1');
    t.equal(ping.statusCode, 422);
    t.match(ping.json().error, { type: 'validation_error', code: 'unknown_parameter', param: 'x' });
    t.equal((await h.request(ws.apiKey, 'GET', '/ping?flag')).json().error.param, 'flag', 'a name without a value too');
    t.equal((await h.request(ws.apiKey, 'GET', '/ping?')).statusCode, 200, 'an empty query string holds no parameter');
    const add = await h.request(ws.apiKey, 'POST', '/suppressions?email=query@example.com', {
      email: 'body@example.com',
    });
    t.equal(add.statusCode, 422);
    t.match(add.json().error, { code: 'unknown_parameter', param: 'email' });
    const added = await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'body@example.com' });
    t.equal(added.statusCode, 201, 'the refused request stored nothing');
    const id = added.json().id;
    const remove = await h.request(ws.apiKey, 'DELETE', `/suppressions/${id}?force=true`);
    t.equal(remove.statusCode, 422);
    t.match(remove.json().error, { code: 'unknown_parameter', param: 'force' });
    t.equal((await h.request(ws.apiKey, 'GET', `/suppressions/${id}`)).statusCode, 200, 'nothing removed');
  });

  t.test('insufficient_scope names the scope in its message; param stays for request fields', async (t) => {
    const key = await newKey();
    const list = await h.request(key.token, 'GET', '/keys');
    t.equal(list.statusCode, 403);
    t.match(list.json().error, { code: 'insufficient_scope', param: null, message: /`keys:read`/ });
    const contacts = (await h.request(ws.apiKey, 'POST', '/keys', { scopes: ['contacts:write'] })).json().token;
    const add = await h.request(contacts, 'POST', '/contacts', { email: 'scoped@example.com', audienceIds: ['aud_x'] });
    t.match(add.json().error, { code: 'insufficient_scope', param: 'audienceIds', message: /`audiences:write`/ });
    const docs = await h.app.inject({ method: 'GET', url: '/docs/errors' });
    const row = /<tr id="insufficient_scope">.*<\/tr>/.exec(docs.body)![0];
    t.match(row, /the message names the scope/);
    t.notMatch(row, /named in `param`/);
  });

  t.test('the owner role: a body of the wrong shape is 422 first, then 409 before any rule of the role', async (t) => {
    const roles = (await h.request(ws.apiKey, 'GET', '/roles')).json().data as { id: string; builtin: string | null }[];
    const owner = roles.find((r) => r.builtin === 'owner')!.id;
    const patch = (body: unknown) => h.request(ws.apiKey, 'PATCH', `/roles/${owner}`, body);
    t.match((await patch({ colour: 1 })).json().error, { code: 'unknown_parameter', param: 'colour' });
    t.match((await patch({ name: 1 })).json().error, { code: 'invalid_parameter', param: 'name' });
    t.match((await patch({ permissions: ['nope'] })).json().error, {
      code: 'invalid_parameter',
      param: 'permissions.0',
    });
    for (const body of [{}, { name: '' }, { name: 'x'.repeat(49) }, { name: 'Admin' }, { permissions: [] }]) {
      const res = await patch(body);
      t.equal(res.statusCode, 409, JSON.stringify(body));
      t.equal(res.json().error.code, 'role_immutable');
    }
    t.match((await h.request(ws.apiKey, 'DELETE', `/roles/${owner}?force=true`)).json().error, {
      code: 'unknown_parameter',
      param: 'force',
    });
    for (const query of ['', `?reassignTo=${owner}`, '?reassignTo=role_000000000000000000000000']) {
      const res = await h.request(ws.apiKey, 'DELETE', `/roles/${owner}${query}`);
      t.equal(res.statusCode, 409, query);
      t.equal(res.json().error.code, 'role_undeletable');
    }
  });
});
