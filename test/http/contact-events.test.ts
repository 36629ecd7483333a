import t from 'tap';
import { createContact } from '../../commands/contacts/handlers.ts';
import { startTestApp, type TestApp } from '../support/app.ts';
import { awayFromMinuteEnd } from '../support/clock.ts';

const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];
const DAY = 24 * 60 * 60 * 1000;

async function contact(h: TestApp, workspaceId: string, email: string): Promise<string> {
  const made = await createContact(
    h.system.commands,
    { workspaceId, kind: 'system', id: null },
    { email, source: 'manual' },
    new Date().toISOString(),
  );
  return made.contactId;
}

async function keyWith(h: TestApp, ownerKey: string, body: object): Promise<string> {
  const res = await h.request(ownerKey, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

/**
 * One app for the file: each test makes workspaces of its own, and every list, read and rate
 * limit is of one workspace or key, so the tests cannot see each other's rows. The two that purge
 * old events purge every workspace's, so they have apps of their own.
 */
const h = await startTestApp(t);

t.test('POST /events: stored against the contact, the shapes of the spec', async (t) => {
  const ws = await h.workspace();
  const contactId = await contact(h, ws.workspaceId, 'ann@example.com');
  const res = await h.request(ws.apiKey, 'POST', '/events', {
    name: 'signed_up',
    email: ' Ann@Example.com ',
    properties: { plan: 'pro' },
  });
  t.equal(res.statusCode, 201, res.body);
  const e = res.json();
  t.match(e, {
    object: 'contact_event',
    contactId,
    email: 'ann@example.com',
    name: 'signed_up',
    properties: { plan: 'pro' },
    mode: 'live',
    replayed: false,
    enrolled: [],
    resumed: 0,
  });
  t.match(e.id, /^cev_[0-9a-f]{24}$/);
  t.ok(Math.abs(Date.parse(e.occurredAt) - Date.now()) < 5000, 'occurredAt defaults to now');
  t.same(Object.keys(e).sort(), [
    'contactId',
    'createdAt',
    'email',
    'enrolled',
    'id',
    'mode',
    'name',
    'object',
    'occurredAt',
    'properties',
    'replayed',
    'resumed',
  ]);
  const byId = await h.request(ws.apiKey, 'POST', '/events', { name: 'x', contactId });
  t.equal(byId.statusCode, 201);
  t.same(byId.json().properties, {}, 'properties default to an empty object');
  const list = await h.request(ws.apiKey, 'GET', '/contacts/ann@example.com/events');
  t.equal(list.statusCode, 200);
  t.same(
    list.json().data.map((r: any) => r.name),
    ['x', 'signed_up'],
    'read-your-writes, most recent first',
  );
  t.same(Object.keys(list.json().data[0]).sort(), [
    'contactId',
    'createdAt',
    'email',
    'id',
    'mode',
    'name',
    'object',
    'occurredAt',
    'properties',
  ]);
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/contacts/${contactId}/events`)).json().data.length,
    2,
    'the path takes a contact id too',
  );
});

t.test('every rule of one event: invalid_event with param, at the edges', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const post = (body: object) => h.request(ws.apiKey, 'POST', '/events', { email: 'a@example.com', ...body });
  const ok = async (body: object, what: string) => t.equal((await post(body)).statusCode, 201, what);
  const bad = async (body: object, param: string | null, what: string, code = 'invalid_event') =>
    t.same(errorOf(await post(body)), [422, code, param], what);

  await ok({ name: 'a'.repeat(100) }, 'name of 100');
  await bad({ name: 'a'.repeat(101) }, 'name', 'name of 101');
  await bad({ name: '' }, 'name', 'empty name');
  await ok({ name: '9a.b:c-d_E' }, 'every allowed character');
  for (const name of ['_a', '.a', '-a', ':a', 'a b', 'a/b', 'é']) await bad({ name }, 'name', `name ${name}`);
  await bad({ name: 42 }, 'name', 'a name that is not a string is the wrong shape', 'invalid_parameter');
  await bad({ name: 'x', unknown: 1 }, 'unknown', 'unknown field', 'unknown_parameter');

  const keys = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
  await ok({ name: 'x', properties: keys(50) }, '50 property keys');
  await bad({ name: 'x', properties: keys(51) }, 'properties', '51 property keys');
  // {"p":"…"} is 8 bytes around the value.
  await ok({ name: 'x', properties: { p: 'a'.repeat(4096 - 8) } }, '4096 bytes of properties');
  await bad({ name: 'x', properties: { p: 'a'.repeat(4096 - 7) } }, 'properties', '4097 bytes of properties');
  await bad({ name: 'x', properties: { p: 'é'.repeat(2045) } }, 'properties', 'bytes, not characters');
  await bad({ name: 'x', properties: [1] }, 'properties', 'properties must be an object', 'invalid_parameter');

  const now = Date.now();
  await ok({ name: 'x', occurredAt: new Date(now - 90 * DAY + 60_000).toISOString() }, '90 days old less a minute');
  await bad(
    { name: 'x', occurredAt: new Date(now - 90 * DAY - 60_000).toISOString() },
    'occurredAt',
    'older than 90 days',
  );
  await ok({ name: 'x', occurredAt: new Date(now + 30_000).toISOString() }, '30 s ahead is within the clock skew');
  await bad(
    { name: 'x', occurredAt: new Date(now + 5 * 60_000).toISOString() },
    'occurredAt',
    'five minutes in the future',
  );
  await bad({ name: 'x', occurredAt: 'yesterday' }, 'occurredAt', 'not a date-time');
  await bad({ name: 'x', occurredAt: '2026-01-01T00:00:00' }, 'occurredAt', 'no zone');

  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x' })),
    [422, 'invalid_event', 'email'],
    'no contact named',
  );
  await bad({ name: 'x', email: 'not-an-address' }, 'email', 'an address that is not one');
  await bad({ name: 'x', email: `${'a'.repeat(310)}@example.com` }, 'email', 'address over 320');
  for (const email of ['a..b@example.com', '.a@example.com', 'a!b@example.com', 'a@example.123']) {
    await bad({ name: 'x', email, createContact: true }, 'email', `${email}: refused as POST /contacts refuses it`);
    t.same(
      errorOf(await h.request(ws.apiKey, 'POST', '/contacts', { email })),
      [422, 'invalid_parameter', 'email'],
      `POST /contacts refuses ${email}`,
    );
  }
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x', contactId: 'c'.repeat(65) })), [
    422,
    'invalid_event',
    'contactId',
  ]);
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x', contactId: 'con_1', createContact: true })),
    [422, 'invalid_event', 'createContact'],
    'createContact needs email',
  );
  await ok(
    { name: 'x', createContact: true, contactName: 'n'.repeat(200), email: 'b@example.com' },
    'contactName of 200',
  );
  await bad(
    { name: 'x', createContact: true, contactName: 'n'.repeat(201), email: 'c@example.com' },
    'contactName',
    'contactName of 201',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x', email: 'nobody@example.com' })), [
    404,
    'contact_not_found',
    'email',
  ]);
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x', contactId: 'con_000000000000000000000000' })),
    [404, 'contact_not_found', 'contactId'],
  );
});

t.test('case-sensitive names; createContact makes an auto contact once', async (t) => {
  const ws = await h.workspace();
  const first = await h.request(ws.apiKey, 'POST', '/events', {
    name: 'Opened',
    email: 'new@example.com',
    createContact: true,
    contactName: 'New One',
  });
  t.equal(first.statusCode, 201, first.body);
  const again = await h.request(ws.apiKey, 'POST', '/events', {
    name: 'opened',
    email: 'new@example.com',
    createContact: true,
    contactName: 'Other',
  });
  t.equal(again.json().contactId, first.json().contactId, 'the second finds the contact the first made');
  const row = await h.system.database.pool.query(
    'SELECT source, name FROM contacts WHERE workspace_id = $1 AND email = $2',
    [ws.workspaceId, 'new@example.com'],
  );
  t.same(row.rows, [{ source: 'auto', name: 'New One' }]);
  const many = await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: Array.from({ length: 30 }, (_, i) => ({
      name: 'made',
      email: `m${i % 25}@example.com`,
      createContact: true,
    })),
  });
  t.equal(many.json().accepted.length, 30, 'a batch making 25 contacts');
  t.equal(new Set(many.json().accepted.map((a: any) => a.contactId)).size, 25);
  const made = await h.system.database.pool.query(
    "SELECT count(*)::int AS n FROM contacts WHERE workspace_id = $1 AND source = 'auto' AND email LIKE 'm%'",
    [ws.workspaceId],
  );
  t.equal(made.rows[0].n, 25);
  const names = await h.request(ws.apiKey, 'GET', '/events/names');
  t.same(
    names.json(),
    {
      object: 'list',
      data: [
        { object: 'contact_event_name', name: 'Opened' },
        { object: 'contact_event_name', name: 'made' },
        { object: 'contact_event_name', name: 'opened' },
      ],
    },
    'distinct, in byte order',
  );
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/contacts/new@example.com/events?name=opened')).json().data.length,
    1,
    'the name filter is exact',
  );
});

t.test('GET /events/names: byte order, distinct, at most 100, scope automations:read', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const names = Array.from({ length: 105 }, (_, i) => `n${String(i).padStart(3, '0')}`).concat(['B', 'a', 'Z.z', '1']);
  const batch = async (list: string[]) => {
    const res = await h.request(ws.apiKey, 'POST', '/events/batch', {
      events: list.map((name) => ({ name, email: 'a@example.com' })),
    });
    t.equal(res.json().accepted.length, list.length);
  };
  await batch(names.slice(0, 100));
  await batch([...names.slice(100), 'n000', 'n000']);
  const res = await h.request(ws.apiKey, 'GET', '/events/names');
  const got = res.json().data.map((d: any) => d.name);
  t.equal(got.length, 100);
  t.same(got.slice(0, 4), ['1', 'B', 'Z.z', 'a'], 'byte order: digits, upper case, lower case');
  t.equal(new Set(got).size, 100, 'distinct');
  const contactsOnly = await keyWith(h, ws.apiKey, { scopes: ['contacts:write'] });
  t.same(errorOf(await h.request(contactsOnly, 'GET', '/events/names')), [403, 'insufficient_scope', null]);
  const readOnly = await keyWith(h, ws.apiKey, { scopes: ['contacts:read'] });
  t.same(errorOf(await h.request(readOnly, 'POST', '/events', { name: 'x', email: 'a@example.com' })), [
    403,
    'insufficient_scope',
    null,
  ]);
});

t.test('Idempotency-Key: replay, reuse, malformed, edges, races', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const post = (key: string, body: object) =>
    h.request(ws.apiKey, 'POST', '/events', { email: 'a@example.com', ...body }, { 'idempotency-key': key });
  const first = await post('order-1', { name: 'paid', properties: { b: 1, a: 2 } });
  t.equal(first.statusCode, 201);
  const replay = await post('order-1', { name: 'paid', properties: { a: 2, b: 1 } });
  t.equal(replay.statusCode, 200);
  t.same(replay.json(), { ...first.json(), replayed: true }, 'the stored event, replayed; key order does not matter');
  t.same(errorOf(await post('order-1', { name: 'paid', properties: { a: 3 } })), [422, 'idempotency_key_reuse', null]);
  t.same(errorOf(await post('order-1', { name: 'refunded' })), [422, 'idempotency_key_reuse', null]);
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events')).json().data.length, 1, 'stored once');
  t.equal((await post('k'.repeat(255), { name: 'x' })).statusCode, 201, 'a key of 255');
  t.same(
    errorOf(await post('k'.repeat(256), { name: 'x' })),
    [400, 'invalid_idempotency_key', 'Idempotency-Key'],
    'a key of 256',
  );
  for (const key of ['a b', 'ключ', 'a/b', 'a+b'])
    t.same(errorOf(await post(key, { name: 'x' })), [400, 'invalid_idempotency_key', 'Idempotency-Key'], `key ${key}`);
  t.equal((await post('A_.:-9', { name: 'x' })).statusCode, 201, 'every allowed character');

  const other = await h.workspace();
  await contact(h, other.workspaceId, 'a@example.com');
  const foreign = await h.request(
    other.apiKey,
    'POST',
    '/events',
    { name: 'paid', email: 'a@example.com' },
    { 'idempotency-key': 'order-1' },
  );
  t.equal(foreign.statusCode, 201, 'keys are per workspace');

  const race = await Promise.all(Array.from({ length: 8 }, () => post('race', { name: 'raced' })));
  t.same(
    race.map((r) => r.statusCode).sort(),
    [200, 200, 200, 200, 200, 200, 200, 201],
    'eight at once: one stores, seven replay',
  );
  t.equal(new Set(race.map((r) => r.json().id)).size, 1, 'all answer the one event');
  const stored = (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?name=raced')).json().data;
  t.equal(stored.length, 1, 'stored once');
  const batches = await Promise.all(
    Array.from({ length: 6 }, () =>
      h.request(
        ws.apiKey,
        'POST',
        '/events/batch',
        {
          events: [
            { name: 'b0', email: 'a@example.com' },
            { name: 'b1', email: 'a@example.com' },
          ],
        },
        { 'idempotency-key': 'race-batch' },
      ),
    ),
  );
  t.same(
    batches.map((r) => r.json().accepted.filter((a: any) => !a.replayed).length).sort(),
    [0, 0, 0, 0, 0, 2],
    'six batches at once under one key: one stores both positions',
  );
  t.ok(
    batches.every(
      (r) =>
        r
          .json()
          .accepted.map((a: any) => a.id)
          .join() ===
        batches[0]!
          .json()
          .accepted.map((a: any) => a.id)
          .join(),
    ),
    'all answer the same events',
  );
  const count = await h.system.database.pool.query(
    "SELECT count(*)::int AS n FROM contact_events WHERE workspace_id = $1 AND name IN ('b0', 'b1')",
    [ws.workspaceId],
  );
  t.equal(count.rows[0].n, 2);
  const testKey = await keyWith(h, ws.apiKey, { scopes: ['contacts:write', 'contacts:read'], mode: 'test' });
  const asTest = await h.request(
    testKey,
    'POST',
    '/events',
    { name: 'signed-up', email: 'a@example.com', createContact: true },
    { 'idempotency-key': 'shared' },
  );
  const asLive = await post('shared', { name: 'signed-up' });
  t.same(
    [asTest.statusCode, asTest.json().mode, asLive.statusCode, asLive.json().mode, asLive.json().replayed],
    [201, 'test', 201, 'live', false],
    "a test key's event under a key neither replays for nor blocks the live one",
  );
  t.equal(
    (await post('shared', { name: 'other' })).statusCode,
    422,
    'the live event is what the key now holds for live keys',
  );
  const mixed = await Promise.all([post('race2', { name: 'one' }), post('race2', { name: 'two' })]);
  t.same(
    mixed.map((r) => r.statusCode).sort(),
    [201, 422],
    'two different events at once under one key: one stored, one refused',
  );
});

t.test('POST /events/batch: in order, per position, failures do not stop the rest', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const events = [
    { name: 'one', email: 'a@example.com' },
    { name: '_bad', email: 'a@example.com' },
    { name: 'three', email: 'ghost@example.com' },
    { name: 'four', email: 'a@example.com', occurredAt: new Date(Date.now() - 1000).toISOString() },
  ];
  const res = await h.request(ws.apiKey, 'POST', '/events/batch', { events }, { 'idempotency-key': 'b-1' });
  t.equal(res.statusCode, 200, res.body);
  const b = res.json();
  t.equal(b.object, 'contact_event_batch');
  t.same(
    b.accepted.map((a: any) => [a.index, a.name, a.replayed]),
    [
      [0, 'one', false],
      [3, 'four', false],
    ],
  );
  t.same(
    b.failed.map((f: any) => [f.index, f.code]),
    [
      [1, 'invalid_event'],
      [2, 'contact_not_found'],
    ],
  );
  t.ok(b.failed.every((f: any) => typeof f.message === 'string' && Object.keys(f).length === 3));

  // The same key: stored positions replay, a refused one is tried again, a changed one is refused.
  await contact(h, ws.workspaceId, 'ghost@example.com');
  const retry = await h.request(
    ws.apiKey,
    'POST',
    '/events/batch',
    {
      events: [
        events[0],
        { name: 'two', email: 'a@example.com' },
        events[2],
        { name: 'changed', email: 'a@example.com' },
      ],
    },
    { 'idempotency-key': 'b-1' },
  );
  const r = retry.json();
  t.same(
    r.accepted.map((a: any) => [a.index, a.replayed]),
    [
      [0, true],
      [1, false],
      [2, false],
    ],
  );
  t.same(
    r.failed.map((f: any) => [f.index, f.code]),
    [[3, 'idempotency_key_reuse']],
  );
  t.equal(r.accepted[0].id, b.accepted[0].id);
  // A single event under the batch's key is its position 0.
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/events', events[0], { 'idempotency-key': 'b-1' })).json().replayed,
    true,
  );

  const order = (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?limit=200'))
    .json()
    .data.map((e: any) => e.name);
  t.same(order, ['two', 'one', 'four'], 'most recent first by occurrence');

  const whole = async (body: unknown, param: string | null, code = 'invalid_parameter') =>
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/events/batch', body)), [422, code, param]);
  await whole({ events: [] }, 'events');
  await whole({ events: Array.from({ length: 101 }, () => events[0]) }, 'events');
  await whole({ events: [events[0], events[0], events[0], { name: 1, email: 'a@example.com' }] }, 'events.3.name');
  await whole({ events: [{ email: 'a@example.com' }] }, 'events.0.name');
  await whole({ events: 'x' }, 'events');
  await whole({}, 'events');
  await whole({ events: [{ ...events[0], extra: 1 }] }, 'events.0.extra', 'unknown_parameter');
  const hundred = await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: Array.from({ length: 100 }, (_, i) => ({ name: `e${i}`, email: 'a@example.com' })),
  });
  t.equal(hundred.json().accepted.length, 100, 'a batch of 100');
  t.same(
    hundred.json().accepted.map((a: any) => a.index),
    Array.from({ length: 100 }, (_, i) => i),
    'in order',
  );
  const names = (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?limit=200'))
    .json()
    .data.map((e: any) => e.name);
  t.equal(names.length, 103);
});

t.test(
  'rate limit: 600 stored events a minute per key, a batch counts as what it stores; refused and replayed events do not count',
  async (t) => {
    await awayFromMinuteEnd(15);
    const ws = await h.workspace();
    await contact(h, ws.workspaceId, 'a@example.com');
    const events = (n: number, event: object = {}) =>
      Array.from({ length: n }, (_, i) => ({ name: `e${i}`, email: 'a@example.com', ...event }));
    const batch = (list: object[], headers?: Record<string, string>, key = ws.apiKey) =>
      h.request(key, 'POST', '/events/batch', { events: list }, headers);
    const stored = async () =>
      (
        await h.system.database.pool.query('SELECT count(*)::int AS n FROM contact_events WHERE workspace_id = $1', [
          ws.workspaceId,
        ])
      ).rows[0].n;
    for (let i = 0; i < 5; i++) t.equal((await batch(events(100))).statusCode, 200);
    const mixed = await batch([
      ...events(40),
      ...events(30, { name: '_bad' }),
      ...events(30, { email: 'nobody@example.com' }),
    ]);
    t.same(
      [mixed.statusCode, mixed.json().accepted.length, mixed.json().failed.length],
      [200, 40, 60],
      '540 stored: the 60 refused do not count',
    );
    const keyed = events(59);
    t.equal((await batch(keyed, { 'idempotency-key': 'k1' })).json().accepted.length, 59, '599 stored');
    const replay = await batch(keyed, { 'idempotency-key': 'k1' });
    t.equal(replay.statusCode, 200, 'a replay of 59 stores nothing and is not counted');
    t.ok(replay.json().accepted.every((a: any) => a.replayed));
    t.equal(await stored(), 599);

    const refused = await batch(events(2));
    t.same(errorOf(refused), [429, 'event_rate_limited', null], '601 would pass the limit');
    t.ok(Number(refused.headers['retry-after']) >= 1 && Number(refused.headers['retry-after']) <= 60, 'Retry-After');
    const partly = await batch([...events(1, { name: 'last' }), ...events(1, { name: '_bad' })], {
      'idempotency-key': 'k2',
    });
    t.same(
      [partly.statusCode, partly.json().accepted.length, partly.json().failed.length],
      [200, 1, 1],
      'the 600th fits beside a refused one: the refused batch took nothing',
    );
    t.equal(await stored(), 600);

    t.same(
      errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x', email: 'a@example.com' })),
      [429, 'event_rate_limited', null],
      'the 601st',
    );
    t.same(
      errorOf(
        await h.request(ws.apiKey, 'POST', '/events', { name: 'x', email: 'new@example.com', createContact: true }),
      ),
      [429, 'event_rate_limited', null],
    );
    t.equal(
      (await h.request(ws.apiKey, 'GET', '/contacts/new@example.com')).statusCode,
      404,
      'a refused request makes no contact either',
    );
    t.same(
      errorOf(
        await h.request(
          ws.apiKey,
          'POST',
          '/events',
          { name: 'x', email: 'a@example.com' },
          { 'idempotency-key': 'k3' },
        ),
      ),
      [429, 'event_rate_limited', null],
    );
    t.equal((await batch(keyed, { 'idempotency-key': 'k1' })).statusCode, 200, 'at the limit a replay still answers');
    const onlyBad = await batch(events(3, { name: '_bad' }));
    t.same(
      [onlyBad.statusCode, onlyBad.json().failed.length],
      [200, 3],
      'at the limit a batch that stores nothing is answered, not refused',
    );
    t.equal(await stored(), 600, 'exactly 600 stored');
    t.same(
      errorOf(
        await h.request(
          ws.apiKey,
          'POST',
          '/events',
          { name: 'x', email: 'a@example.com' },
          { 'idempotency-key': 'k3' },
        ),
      ),
      [429, 'event_rate_limited', null],
      'a refused key stored nothing to replay',
    );
    const second = await keyWith(h, ws.apiKey, { scopes: ['contacts:write', 'contacts:read'] });
    t.equal((await batch(events(100), undefined, second)).statusCode, 200, 'per key');
  },
);

t.test('rate limit: requests racing under one key count the events stored once', async (t) => {
  await awayFromMinuteEnd(15);
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const events = Array.from({ length: 100 }, (_, i) => ({ name: `e${i}`, email: 'a@example.com' }));
  const race = await Promise.all(
    Array.from({ length: 5 }, () =>
      h.request(ws.apiKey, 'POST', '/events/batch', { events }, { 'idempotency-key': 'race' }),
    ),
  );
  t.same(
    race.map((r) => r.statusCode),
    [200, 200, 200, 200, 200],
  );
  t.equal(
    race.filter((r) => r.json().accepted.every((a: any) => !a.replayed)).length,
    1,
    'one stored, the others replayed',
  );
  for (let i = 0; i < 5; i++)
    t.equal(
      (await h.request(ws.apiKey, 'POST', '/events/batch', { events })).statusCode,
      200,
      `${200 + i * 100} counted`,
    );
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/events', { name: 'x', email: 'a@example.com' })),
    [429, 'event_rate_limited', null],
    'the 601st',
  );
});

t.test(
  'test-mode keys store mode test in the test book; narrowed keys are refused; foreign contacts are 404',
  async (t) => {
    const ws = await h.workspace();
    await contact(h, ws.workspaceId, 'a@example.com');
    const testKey = await keyWith(h, ws.apiKey, { scopes: ['contacts:write', 'contacts:read'], mode: 'test' });
    t.same(
      errorOf(await h.request(testKey, 'POST', '/events', { name: 'x', email: 'a@example.com' })),
      [404, 'contact_not_found', 'email'],
      'the live book is not the test book',
    );
    const res = await h.request(testKey, 'POST', '/events', {
      name: 'x',
      email: 'new@example.com',
      createContact: true,
      contactName: 'New',
    });
    t.equal(res.statusCode, 201, res.body);
    t.equal(res.json().mode, 'test');
    const made = await h.request(testKey, 'GET', '/contacts/new@example.com/events');
    t.same(
      [made.json().data.map((e: any) => e.mode), made.json().data[0].contactId],
      [['test'], res.json().contactId],
      'createContact makes the contact in the test book',
    );
    const batch = await h.request(testKey, 'POST', '/events/batch', {
      events: [
        { name: 'x', email: 'other@example.com' },
        { name: 'x', email: 'new@example.com' },
      ],
    });
    t.same(
      batch.json().failed.map((f: any) => [f.index, f.code]),
      [[0, 'contact_not_found']],
    );
    t.same(
      batch.json().accepted.map((a: any) => [a.index, a.mode]),
      [[1, 'test']],
      'a contact of the test book takes the test event',
    );
    t.equal(
      (await h.request(ws.apiKey, 'GET', '/contacts/new@example.com')).statusCode,
      404,
      'the live book is unchanged',
    );
    t.same(
      (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events')).json().data,
      [],
      'and its contact has no test events',
    );
    const narrowed = await keyWith(h, ws.apiKey, {
      scopes: ['contacts:write', 'contacts:read', 'automations:read'],
      domainAllowlist: ['example.com'],
    });
    t.same(errorOf(await h.request(narrowed, 'POST', '/events', { name: 'x', email: 'a@example.com' })), [
      422,
      'capability_unsupported',
      'addressAllowlist',
    ]);
    t.same(
      errorOf(await h.request(narrowed, 'POST', '/events/batch', { events: [{ name: 'x', email: 'a@example.com' }] })),
      [422, 'capability_unsupported', 'addressAllowlist'],
    );
    t.same(errorOf(await h.request(narrowed, 'GET', '/contacts/a@example.com/events')), [
      422,
      'capability_unsupported',
      'addressAllowlist',
    ]);
    const other = await h.workspace();
    const cid = await contact(h, ws.workspaceId, 'b@example.com');
    t.same(errorOf(await h.request(other.apiKey, 'GET', '/contacts/a@example.com/events')), [
      404,
      'contact_not_found',
      'email',
    ]);
    t.same(errorOf(await h.request(other.apiKey, 'GET', `/contacts/${cid}/events`)), [
      404,
      'contact_not_found',
      'email',
    ]);
    t.same(errorOf(await h.request(other.apiKey, 'POST', '/events', { name: 'x', contactId: cid })), [
      404,
      'contact_not_found',
      'contactId',
    ]);
  },
);

t.test('GET /contacts/{email}/events: limits, cursor = id of the last row, rows added between pages', async (t) => {
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const base = Date.now() - 60 * 60_000;
  const at = (i: number) => new Date(base + i * 1000).toISOString();
  await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: Array.from({ length: 60 }, (_, i) => ({
      name: i % 2 ? 'odd' : 'even',
      email: 'a@example.com',
      occurredAt: at(i),
    })),
  });
  const page1 = (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events')).json();
  t.equal(page1.data.length, 50, 'default 50');
  t.equal(page1.hasMore, true);
  t.equal(page1.nextCursor, page1.data[49].id, 'nextCursor is the id of the last row');
  // Rows added between pages, newer and older than the cursor.
  await h.request(ws.apiKey, 'POST', '/events/batch', {
    events: [
      { name: 'late', email: 'a@example.com' },
      { name: 'old', email: 'a@example.com', occurredAt: new Date(base - 5000).toISOString() },
    ],
  });
  const page2 = (await h.request(ws.apiKey, 'GET', `/contacts/a@example.com/events?cursor=${page1.nextCursor}`)).json();
  t.same(
    page2.data.map((e: any) => e.occurredAt),
    [...Array.from({ length: 10 }, (_, i) => at(9 - i)), new Date(base - 5000).toISOString()],
  );
  t.equal(page2.hasMore, false);
  t.equal(page2.nextCursor, null);
  const small = (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?limit=1&name=odd')).json();
  t.same([small.data.length, small.data[0].occurredAt, small.hasMore], [1, at(59), true]);
  const next = (
    await h.request(ws.apiKey, 'GET', `/contacts/a@example.com/events?limit=1&name=odd&cursor=${small.nextCursor}`)
  ).json();
  t.equal(next.data[0].occurredAt, at(57));
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?limit=200')).json().data.length,
    62,
    'limit 200',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?limit=201')), [
    422,
    'invalid_parameter',
    'limit',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?limit=0')), [
    422,
    'invalid_parameter',
    'limit',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/contacts/a@example.com/events?name=${'n'.repeat(101)}`)), [
    422,
    'invalid_parameter',
    'name',
  ]);
  await contact(h, ws.workspaceId, 'b@example.com');
  t.same(
    errorOf(await h.request(ws.apiKey, 'GET', `/contacts/b@example.com/events?cursor=${page1.nextCursor}`)),
    [400, 'invalid_cursor', 'cursor'],
    "another contact's event id",
  );
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events?sort=x')), [
    422,
    'unknown_parameter',
    'sort',
  ]);
});

t.test(
  "GET /contacts/{email}/events: the cursor event purged between pages ends the walk; other lists' cursors are invalid_cursor",
  async (t) => {
    const h = await startTestApp(t);
    const ws = await h.workspace();
    await contact(h, ws.workspaceId, 'a@example.com');
    const now = Date.now();
    const ago = (ms: number) => new Date(now - ms).toISOString();
    // Three events about to expire, three recent ones.
    const occurred = [89.5 * DAY, 89.4 * DAY, 89.3 * DAY, 60 * 60_000, 30 * 60_000, 10 * 60_000].map(ago);
    await h.request(ws.apiKey, 'POST', '/events/batch', {
      events: occurred.map((occurredAt, i) => ({ name: `e${i}`, email: 'a@example.com', occurredAt })),
    });
    const list = async (query: string) => {
      const res = await h.request(ws.apiKey, 'GET', `/contacts/a@example.com/events?${query}`);
      t.equal(res.statusCode, 200, res.body);
      return res.json();
    };
    const namesOf = (page: any) => page.data.map((e: any) => e.name);

    const p1 = await list('limit=2');
    t.same(namesOf(p1), ['e5', 'e4']);
    // Added between pages: one newer than the cursor (not shown again), one older (shown in its place).
    await h.request(ws.apiKey, 'POST', '/events/batch', {
      events: [
        { name: 'late', email: 'a@example.com' },
        { name: 'x', email: 'a@example.com', occurredAt: ago(2 * 60 * 60_000) },
      ],
    });
    const p2 = await list(`limit=3&cursor=${p1.nextCursor}`);
    t.same(namesOf(p2), ['e3', 'x', 'e2']);
    t.equal(p2.nextCursor, p2.data[2].id);

    const { ContactEventRetention } = await import('../../processes/contact-events/retention.ts');
    const retention = new ContactEventRetention(h.system.database.pool, { everyMs: 3_600_000, purgeStore: false });
    t.match(await retention.purge(new Date(now + 0.55 * DAY)), { rows: 1 }, 'e0 expires');
    const p3 = await list(`limit=3&cursor=${p2.nextCursor}`);
    t.same(
      [namesOf(p3), p3.hasMore, p3.nextCursor],
      [['e1'], false, null],
      'rows purged after the cursor are simply not there',
    );
    t.match(
      await retention.purge(new Date(now + 0.75 * DAY)),
      { rows: 2 },
      'e2, the cursor event, expires, and e1 with it',
    );
    t.same(
      await list(`limit=3&cursor=${p2.nextCursor}`),
      { object: 'list', data: [], hasMore: false, nextCursor: null },
      'a purged cursor: an empty last page',
    );
    t.same(namesOf(await list('limit=10')), ['late', 'e5', 'e4', 'e3', 'x']);

    // Cursors this list did not hand out.
    const cursorOf = async (apiKey: string, path: string) =>
      (await h.request(apiKey, 'GET', path)).json().nextCursor as string;
    const other = await h.workspace();
    await contact(h, other.workspaceId, 'a@example.com');
    await h.request(other.apiKey, 'POST', '/events/batch', {
      events: [
        { name: 'e', email: 'a@example.com' },
        { name: 'e', email: 'a@example.com' },
      ],
    });
    const foreign = await cursorOf(other.apiKey, '/contacts/a@example.com/events?limit=1');
    const otherName = await cursorOf(ws.apiKey, '/contacts/a@example.com/events?limit=1');
    await h.request(ws.apiKey, 'POST', '/contacts', { email: 'b@example.com' });
    const contactsCursor = await cursorOf(ws.apiKey, '/contacts?limit=1');
    for (const [cursor, what] of [
      [`${otherName}&name=e4`, 'an event outside the name filter'],
      [otherName.slice(0, -1), 'a cut id'],
      [`${otherName}0`, 'a lengthened id'],
      ['garbage', 'garbage'],
      [encodeURIComponent(contactsCursor), 'a cursor of the contacts list'],
    ] as const) {
      t.same(
        errorOf(await h.request(ws.apiKey, 'GET', `/contacts/a@example.com/events?cursor=${cursor}`)),
        [400, 'invalid_cursor', 'cursor'],
        what,
      );
    }
    t.same(
      await list('cursor=cev_000000000000000000000000'),
      { object: 'list', data: [], hasMore: false, nextCursor: null },
      'an id naming no event reads as purged',
    );
    t.same(
      await list(`cursor=${foreign}`),
      { object: 'list', data: [], hasMore: false, nextCursor: null },
      "and so does another workspace's event: its existence is not told",
    );
  },
);

t.test('retention: rows and stored events older than 90 days are purged', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  await contact(h, ws.workspaceId, 'a@example.com');
  const now = Date.now();
  await h.request(
    ws.apiKey,
    'POST',
    '/events',
    { name: 'old', email: 'a@example.com', occurredAt: new Date(now - 89 * DAY).toISOString() },
    { 'idempotency-key': 'old' },
  );
  await h.request(ws.apiKey, 'POST', '/events', { name: 'new', email: 'a@example.com' });
  const { ContactEventRetention } = await import('../../processes/contact-events/retention.ts');
  const purge = new ContactEventRetention(h.system.database.pool, { everyMs: 3_600_000, purgeStore: true });
  t.match(await purge.purge(new Date(now)), { rows: 0, streams: 0 }, 'nothing is due yet');
  // Two days on: the 89-day-old event is past 90 days; its stream was recorded today, so the store keeps it.
  t.match(await purge.purge(new Date(now + 2 * DAY)), { rows: 1, names: 1, streams: 0 });
  t.same(
    (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com/events')).json().data.map((e: any) => e.name),
    ['new'],
  );
  t.same(
    (await h.request(ws.apiKey, 'GET', '/events/names')).json().data.map((e: any) => e.name),
    ['new'],
  );
  // 91 days on, every stream's newest event was recorded more than 90 days ago: deleted whole, so the key is free again.
  const later = await purge.purge(new Date(now + 91 * DAY));
  t.match(later, { rows: 1, streams: 2, storedEvents: 2 });
  const left = await h.system.database.pool.query(
    "SELECT count(*)::int AS n FROM es_events WHERE stream_id LIKE 'ws-%.contact-events-%'",
  );
  t.equal(left.rows[0].n, 0);
  const reused = await h.request(
    ws.apiKey,
    'POST',
    '/events',
    { name: 'again', email: 'a@example.com' },
    { 'idempotency-key': 'old' },
  );
  t.equal(reused.statusCode, 201, 'a purged key stores afresh');
});
