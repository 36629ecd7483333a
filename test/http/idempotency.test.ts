import pg from 'pg';
import t from 'tap';
import { openSystem, serve } from '../../system.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { freshDatabase } from '../support/database.ts';
import { TEST_SECRETS_KEY } from '../support/secrets.ts';

const key = (k: string) => ({ 'idempotency-key': k });

async function templates(h: TestApp, apiKey: string): Promise<string[]> {
  return (await h.request(apiKey, 'GET', '/templates?limit=100')).json().data.map((row: { name: string }) => row.name);
}

/**
 * One app for four of the tests: each makes workspaces of its own, and idempotency keys are
 * per workspace, so they cannot see each other's. The test that ages every stored key and the one
 * whose second process takes the file's database have apps of their own.
 */
const h = await startTestApp(t);

t.test(
  'Idempotency-Key on a POST: the same request gets the stored answer, another request under the key is refused',
  async (t) => {
    const ws = await h.workspace();
    const first = await h.request(
      ws.apiKey,
      'POST',
      '/templates',
      { name: 'Welcome', description: 'Hi' },
      key('create-welcome'),
    );
    t.equal(first.statusCode, 201);
    t.notOk(first.headers['idempotent-replayed']);
    // The same fields in another order are the same request.
    const again = await h.request(
      ws.apiKey,
      'POST',
      '/templates',
      { description: 'Hi', name: 'Welcome' },
      key('create-welcome'),
    );
    t.equal(again.statusCode, 201, 'the stored status');
    t.same(again.json(), first.json(), 'the stored body');
    t.equal(again.headers['idempotent-replayed'], 'true');
    t.equal(again.headers.etag, first.headers.etag, 'the stored headers');
    t.same(await templates(h, ws.apiKey), ['Welcome'], 'made once');

    const other = await h.request(ws.apiKey, 'POST', '/templates', { name: 'Other' }, key('create-welcome'));
    t.equal(other.statusCode, 422);
    t.match(other.json().error, { code: 'idempotency_key_reuse', param: 'Idempotency-Key' });
    const elsewhere = await h.request(
      ws.apiKey,
      'POST',
      '/suppressions',
      { email: 'a@example.com' },
      key('create-welcome'),
    );
    t.equal(elsewhere.json().error.code, 'idempotency_key_reuse', 'another operation under the key is another request');
    t.same(await templates(h, ws.apiKey), ['Welcome'], 'nothing changed by the refusals');
    t.equal((await h.request(ws.apiKey, 'GET', '/suppressions')).json().data.length, 0);

    // A refusal the handler decided is the stored answer too.
    const taken = await h.request(ws.apiKey, 'POST', '/templates', { name: 'welcome' }, key('create-taken'));
    t.equal(taken.statusCode, 409);
    const takenAgain = await h.request(ws.apiKey, 'POST', '/templates', { name: 'welcome' }, key('create-taken'));
    t.equal(takenAgain.statusCode, 409);
    t.same(takenAgain.json(), taken.json(), 'the stored refusal, request id and all');
    t.equal(takenAgain.headers['idempotent-replayed'], 'true');

    // Refusals before the handler runs store nothing: a corrected request may use the key.
    t.equal((await h.request(ws.apiKey, 'POST', '/templates', { name: '' }, key('create-fixed'))).statusCode, 422);
    t.equal((await h.request(ws.apiKey, 'POST', '/templates', { name: 'Fixed' }, key('create-fixed'))).statusCode, 201);
  },
);

t.test('Idempotency-Key: malformed keys are 400 on every POST; 255 characters is the longest', async (t) => {
  const ws = await h.workspace();
  for (const bad of ['has space', 'ü', 'a'.repeat(256), 'semi;colon', '']) {
    const res = await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'x@example.com' }, key(bad));
    t.equal(res.statusCode, 400, JSON.stringify(bad));
    t.match(res.json().error, { code: 'invalid_idempotency_key', param: 'Idempotency-Key' });
  }
  t.equal((await h.request(ws.apiKey, 'GET', '/suppressions')).json().data.length, 0, 'nothing stored');
  const longest = `${'aZ0_.:-'.repeat(36)}abc`;
  t.equal(longest.length, 255);
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'x@example.com' }, key(longest))).statusCode,
    201,
  );
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'x@example.com' }, key(longest))).headers[
      'idempotent-replayed'
    ],
    'true',
  );
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/keys/self/rotate', undefined, key('bad key'))).statusCode,
    400,
    'a bodyless POST too',
  );
  t.equal(
    (await h.request(ws.apiKey, 'PATCH', '/templates/tpl_x', { name: 'x' }, key('bad key'))).statusCode,
    404,
    'only POST takes one',
  );
});

t.test('Idempotency-Key: keys are per workspace, mode and credential; concurrent repeats make one', async (t) => {
  const one = await h.workspace();
  const two = await h.workspace();
  t.equal((await h.request(one.apiKey, 'POST', '/templates', { name: 'Same' }, key('k'))).statusCode, 201);
  const inTwo = await h.request(two.apiKey, 'POST', '/templates', { name: 'Same' }, key('k'));
  t.equal(inTwo.statusCode, 201);
  t.notOk(inTwo.headers['idempotent-replayed'], 'another workspace has keys of its own');

  const made = async (mode: 'live' | 'test') =>
    (
      await h.request(one.apiKey, 'POST', '/keys', {
        name: `${mode} key`,
        mode,
        scopes: ['keys:manage', 'keys:read', 'templates:write', 'templates:read'],
      })
    ).json().token;
  const live = await made('live');
  const test = await made('test');
  const body = { name: 'Made under k2', mode: 'test', scopes: [] };
  const byLive = await h.request(live, 'POST', '/keys', body, key('k2'));
  t.equal(byLive.statusCode, 201);
  const byTest = await h.request(test, 'POST', '/keys', body, key('k2'));
  t.equal(byTest.statusCode, 201, 'a test key has its keys apart from live keys');
  t.not(byTest.json().id, byLive.json().id);
  const byOwner = await h.request(one.apiKey, 'POST', '/keys', body, key('k2'));
  t.equal(byOwner.statusCode, 422, 'another credential of the same mode: another request under the key');
  t.equal(byOwner.json().error.code, 'idempotency_key_reuse');

  const burst = await Promise.all(
    Array.from({ length: 8 }, () => h.request(one.apiKey, 'POST', '/templates', { name: 'Burst' }, key('burst'))),
  );
  t.same([...new Set(burst.map((r) => r.statusCode))], [201]);
  t.equal(new Set(burst.map((r) => r.json().id)).size, 1, 'every repeat answers the one template made');
  t.equal((await templates(h, one.apiKey)).filter((n) => n === 'Burst').length, 1);
});

t.test(
  'Idempotency-Key: an answer carrying a secret is replayed, but stored unreadable; keys are kept 24 hours',
  async (t) => {
    const h = await startTestApp(t);
    const ws = await h.workspace();
    const created = await h.request(
      ws.apiKey,
      'POST',
      '/keys',
      { name: 'CI', scopes: ['templates:read'] },
      key('ci-key'),
    );
    t.equal(created.statusCode, 201);
    const replayed = await h.request(
      ws.apiKey,
      'POST',
      '/keys',
      { name: 'CI', scopes: ['templates:read'] },
      key('ci-key'),
    );
    t.equal(replayed.json().token, created.json().token, 'the lost answer comes back whole');
    const { rows } = await h.system.database.pool.query('SELECT key_hash, fingerprint, answer FROM idempotency_keys');
    t.equal(rows.length, 1);
    const raw = Buffer.concat([
      Buffer.from(rows[0].key_hash),
      Buffer.from(rows[0].fingerprint),
      rows[0].answer,
    ]).toString('latin1');
    t.notOk(raw.includes(created.json().token.split('_').at(-1)), 'no secret in the table');
    t.notOk(raw.includes('ci-key'), 'nor the key itself');

    await h.system.database.pool.query(`UPDATE idempotency_keys SET created_at = now() - interval '24 hours 1 minute'`);
    const later = await h.request(
      ws.apiKey,
      'POST',
      '/keys',
      { name: 'CI again', scopes: ['templates:read'] },
      key('ci-key'),
    );
    t.equal(later.statusCode, 201, 'after 24 hours the key is free');
    t.notOk(later.headers['idempotent-replayed']);
  },
);

t.test('contact events keep their own Idempotency-Key: per event and position', async (t) => {
  const ws = await h.workspace();
  t.equal((await h.request(ws.apiKey, 'POST', '/contacts', { email: 'c@example.com' })).statusCode, 201);
  const first = await h.request(
    ws.apiKey,
    'POST',
    '/events',
    { name: 'signed_up', email: 'c@example.com' },
    key('ev-1'),
  );
  t.equal(first.statusCode, 201);
  const again = await h.request(
    ws.apiKey,
    'POST',
    '/events',
    { name: 'signed_up', email: 'c@example.com' },
    key('ev-1'),
  );
  t.equal(again.statusCode, 200);
  t.equal(again.json().replayed, true);
  t.notOk(again.headers['idempotent-replayed'], 'not the generic layer');
  const batch = await h.request(
    ws.apiKey,
    'POST',
    '/events/batch',
    {
      events: [
        { name: 'signed_up', email: 'c@example.com' },
        { name: 'other', email: 'c@example.com' },
      ],
    },
    key('ev-1'),
  );
  t.same(
    batch.json().accepted.map((a: { replayed: boolean }) => a.replayed),
    [true, false],
    'position 0 replays, position 1 is new',
  );
});

t.test(
  'a write whose read models are held back answers 503 saying it was stored; a retry with its key gets the original answer',
  async (t) => {
    const h = await startTestApp(t);
    const ws = await h.workspace();
    // A second process on the same database: it takes requests and waits on the checkpoints the
    // first one projects, with a deadline brought down from 10 s.
    const late = await openSystem(h.url, {
      secretsKey: TEST_SECRETS_KEY,
      project: false,
      deliver: false,
      readModelDeadlineMs: 1000,
    });
    const lateApp = await serve(late);
    t.teardown(async () => {
      await lateApp.close();
      await late.close();
    });
    const post = (body: object, headers: Record<string, string> = {}) =>
      lateApp.inject({
        method: 'POST',
        url: '/templates',
        headers: { authorization: `Bearer ${ws.apiKey}`, ...headers },
        payload: body,
      });

    // A write transaction elsewhere on the server (its own database) holds back what subscribers of
    // the log may see, for as long as it runs (docs/decisions/event-sourcing.md, "The price of the xmin rule").
    const holder = new pg.Client({ connectionString: await freshDatabase(t) });
    await holder.connect();
    t.teardown(() => holder.end());
    await holder.query('BEGIN');
    await holder.query('SELECT pg_current_xact_id()');
    let held = true;
    t.teardown(async () => {
      if (held) await holder.query('ROLLBACK');
    });

    const [keyed, bare] = await Promise.all([post({ name: 'Held' }, key('held-1')), post({ name: 'Held bare' })]);
    t.equal(keyed.statusCode, 503);
    t.match(keyed.json().error, { code: 'unreachable', type: 'api_error' });
    t.match(keyed.json().error.message, /stored.*same Idempotency-Key/);
    t.ok(Number(keyed.headers['retry-after']) > 0, 'Retry-After');
    t.equal(bare.statusCode, 503);
    t.match(bare.json().error.message, /was stored.*do not send it again/);
    t.ok(Number(bare.headers['retry-after']) > 0);

    const meanwhile = await post({ name: 'Held' }, key('held-1'));
    t.equal(meanwhile.statusCode, 409, 'a retry while the first is still finishing');
    t.equal(meanwhile.json().error.code, 'idempotency_key_in_use');
    t.ok(Number(meanwhile.headers['retry-after']) > 0);

    await holder.query('COMMIT');
    held = false;
    let retried: Awaited<ReturnType<typeof post>> | undefined;
    for (let i = 0; i < 100; i++) {
      retried = await post({ name: 'Held' }, key('held-1'));
      if (retried.statusCode !== 409) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    t.equal(retried!.statusCode, 201, 'the original answer, not a 409 name taken');
    t.equal(retried!.json().name, 'Held');
    t.equal(retried!.headers['idempotent-replayed'], 'true');
    const names = await templates(h, ws.apiKey);
    t.same(names.sort(), ['Held', 'Held bare'], 'each stored once');
    t.equal((await h.request(ws.apiKey, 'GET', `/templates/${retried!.json().id}`)).statusCode, 200);
  },
);
