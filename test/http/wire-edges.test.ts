import t from 'tap';
import { startTestApp } from '../support/app.ts';
import { awayFromMinuteEnd } from '../support/clock.ts';

t.test('wire edges', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const newKey = async () => (await h.request(ws.apiKey, 'POST', '/keys', { scopes: [] })).json() as { id: string; token: string };
  const windowCounts = async () => {
    const windowStart = Math.floor(Date.now() / 60_000) * 60_000;
    const { rows } = await h.system.database.pool.query('SELECT identity, count FROM rate_limit_windows WHERE window_start = $1', [windowStart]);
    return new Map<string, number>(rows.map((r) => [r.identity, r.count]));
  };
  const loggedPaths = async (token: string) =>
    ((await h.request(token, 'GET', '/keys/self/requests?limit=100')).json().data as { method: string; path: string; status: number }[]).map(
      (r) => `${r.method} ${r.path} ${r.status}`,
    );

  t.test('a valid key on an unknown route or method is counted and logged under the key', async (t) => {
    await awayFromMinuteEnd();
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
    await awayFromMinuteEnd();
    const key = await newKey();
    const before = await windowCounts();
    const callers = [null, 'wms_live_short', `${key.token.slice(0, -43)}${'C'.repeat(43)}`, key.token.replace('wms_live_', 'wms_test_')];
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
});
