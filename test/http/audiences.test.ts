import t from 'tap';
import { addToAudience, createContact, deleteContact, removeFromAudience } from '../../commands/contacts/handlers.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

async function keyWith(h: TestApp, ownerKey: string, body: object): Promise<string> {
  const res = await h.request(ownerKey, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

const errorOf = (res: { statusCode: number; json: () => any }) => ({
  status: res.statusCode,
  code: res.json().error?.code,
  param: res.json().error?.param,
});
const idsOf = (res: { json: () => any }) => res.json().data.map((r: { id: string }) => r.id);
const UNKNOWN = 'aud_000000000000000000000000';

/**
 * One app for the file: each test makes workspaces of its own, and every list and read is
 * of one workspace, so the tests cannot see each other's rows.
 */
const h = await startTestApp(t);

t.test('the default audience: made on first use, exactly one under concurrent first uses, not deletable', async (t) => {
  const ws = await h.workspace();
  const firstUses = await Promise.all([
    ...Array.from({ length: 4 }, () => h.request(ws.apiKey, 'GET', '/audiences')),
    ...Array.from({ length: 4 }, (_, i) => h.request(ws.apiKey, 'POST', '/contacts', { email: `c${i}@example.com` })),
    ...Array.from({ length: 4 }, (_, i) => h.request(ws.apiKey, 'POST', '/audiences', { name: `A${i}` })),
  ]);
  t.same(
    firstUses.map((r) => r.statusCode),
    [200, 200, 200, 200, 201, 201, 201, 201, 201, 201, 201, 201],
  );
  const list = (await h.request(ws.apiKey, 'GET', '/audiences')).json().data;
  const defaults = list.filter((a: any) => a.builtin === 'default');
  t.equal(defaults.length, 1, 'one default audience');
  t.equal(list.length, 5);
  t.equal(list[0].builtin, 'default', 'listed first');
  t.match(defaults[0], {
    object: 'audience',
    id: /^aud_[0-9a-f]{24}$/,
    name: 'All contacts',
    description: null,
    contactCount: 4,
    showOnPreferences: false,
  });
  for (const r of firstUses.slice(4, 8)) t.same(r.json().audienceIds, [defaults[0].id]);
  const events = await h.system.store.readStream(`ws-${ws.workspaceId}.audiences`);
  t.equal(
    events.filter((e) => e.type === 'AudienceCreated' && (e.data as any).builtin === 'default').length,
    1,
    'one default in the store',
  );

  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/audiences/${defaults[0].id}`)), {
    status: 409,
    code: 'builtin_audience',
    param: 'id',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/audiences/${defaults[0].id}/contacts/c0@example.com`)), {
    status: 409,
    code: 'builtin_audience',
    param: 'id',
  });
  const renamed = await h.request(ws.apiKey, 'PATCH', `/audiences/${defaults[0].id}`, {
    name: 'Everyone',
    showOnPreferences: true,
  });
  t.match(renamed.json(), { name: 'Everyone', builtin: 'default', showOnPreferences: true, contactCount: 4 });
});

t.test('create, read, update (omitted keeps, null clears), delete; names at the edge and one past', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const res = await h.request(ws.apiKey, 'POST', '/audiences', {
    name: '  Newsletter  ',
    description: 'Monthly',
    showOnPreferences: true,
  });
  t.equal(res.statusCode, 201);
  const a = res.json();
  t.match(a, {
    object: 'audience',
    id: /^aud_[0-9a-f]{24}$/,
    name: 'Newsletter',
    description: 'Monthly',
    builtin: null,
    contactCount: 0,
    showOnPreferences: true,
  });
  t.same((await h.request(ws.apiKey, 'GET', `/audiences/${a.id}`)).json(), a, 'read-your-writes');
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Newsletter' })).statusCode,
    201,
    'names are not unique',
  );
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'é'.repeat(120) })).statusCode,
    201,
    '120 characters',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/audiences', { name: 'x'.repeat(121) })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'name',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/audiences', { name: '   ' })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'name',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/audiences', {})), {
    status: 422,
    code: 'invalid_parameter',
    param: 'name',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/audiences', { name: 'x', builtin: 'default' })), {
    status: 422,
    code: 'unknown_parameter',
    param: 'builtin',
  });

  let patched = await h.request(ws.apiKey, 'PATCH', `/audiences/${a.id}`, { name: ' Weekly ' });
  t.match(patched.json(), { name: 'Weekly', description: 'Monthly', showOnPreferences: true }, 'omitted keeps');
  patched = await h.request(ws.apiKey, 'PATCH', `/audiences/${a.id}`, { description: null, showOnPreferences: false });
  t.match(patched.json(), { name: 'Weekly', description: null, showOnPreferences: false }, 'null clears');
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/audiences/${a.id}`, { name: null })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'name',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/audiences/${a.id}`, { name: 'y'.repeat(121) })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'name',
  });
  t.equal((await h.request(ws.apiKey, 'PATCH', `/audiences/${a.id}`, { name: 'y'.repeat(120) })).statusCode, 200);

  for (const [method, body] of [['GET'], ['PATCH', { name: 'z' }], ['DELETE']] as const) {
    for (const id of [a.id, UNKNOWN, 'nonsense']) {
      const key = id === a.id ? other.apiKey : ws.apiKey;
      t.same(
        errorOf(await h.request(key, method, `/audiences/${id}`, body)),
        { status: 404, code: 'audience_not_found', param: 'id' },
        `${method} ${id}`,
      );
    }
  }
  t.same(await h.request(ws.apiKey, 'DELETE', `/audiences/${a.id}`).then((r) => r.json()), {
    object: 'audience',
    id: a.id,
    deleted: true,
  });
  t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${a.id}`)).statusCode, 404);
  t.equal((await h.request(ws.apiKey, 'DELETE', `/audiences/${a.id}`)).statusCode, 404);
});

t.test(
  '100 audiences besides the default one; the 101st is workspace_limit_reached; a delete frees a place',
  async (t) => {
    const ws = await h.workspace();
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      const res = await h.request(ws.apiKey, 'POST', '/audiences', { name: `A${i}` });
      t.equal(res.statusCode, 201);
      ids.push(res.json().id);
    }
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/audiences', { name: 'one too many' })), {
      status: 422,
      code: 'workspace_limit_reached',
      param: null,
    });
    await h.request(ws.apiKey, 'DELETE', `/audiences/${ids[0]}`);
    t.equal((await h.request(ws.apiKey, 'POST', '/audiences', { name: 'again' })).statusCode, 201);
    t.equal((await h.request(ws.apiKey, 'POST', '/audiences', { name: 'and again' })).statusCode, 422);

    // The list: default first, then newest first; 101 rows over pages of 100 and 1.
    const first = await h.request(ws.apiKey, 'GET', '/audiences?limit=100');
    t.equal(first.json().data.length, 100);
    t.equal(first.json().hasMore, true);
    t.equal(first.json().data[0].builtin, 'default');
    t.equal(first.json().data[1].name, 'again', 'newest next');
    const second = await h.request(ws.apiKey, 'GET', `/audiences?limit=100&cursor=${first.json().nextCursor}`);
    t.same(
      second.json().data.map((a: any) => a.name),
      ['A1'],
    );
    t.equal(second.json().hasMore, false);
    t.equal(second.json().nextCursor, null);
    t.same(errorOf(await h.request(ws.apiKey, 'GET', '/audiences?limit=101')), {
      status: 422,
      code: 'invalid_parameter',
      param: 'limit',
    });
    t.equal((await h.request(ws.apiKey, 'GET', '/audiences')).json().data.length, 25, 'default 25');
  },
);

t.test(
  'list paging: cursor is an audience id; rows added between pages; unknown or foreign cursors are invalid_cursor',
  async (t) => {
    const ws = await h.workspace();
    const other = await h.workspace();
    const made: string[] = [];
    for (let i = 0; i < 5; i++)
      made.push((await h.request(ws.apiKey, 'POST', '/audiences', { name: `A${i}` })).json().id);
    const p1 = await h.request(ws.apiKey, 'GET', '/audiences?limit=2');
    const defaultId = p1.json().data[0].id;
    t.same(idsOf(p1), [defaultId, made[4]]);
    t.equal(p1.json().nextCursor, made[4]);
    await h.request(ws.apiKey, 'POST', '/audiences', { name: 'late' });
    const p2 = await h.request(ws.apiKey, 'GET', `/audiences?limit=2&cursor=${p1.json().nextCursor}`);
    t.same(idsOf(p2), [made[3], made[2]], 'a newer row added between pages does not shift the walk');
    const p3 = await h.request(ws.apiKey, 'GET', `/audiences?limit=2&cursor=${p2.json().nextCursor}`);
    t.same(idsOf(p3), [made[1], made[0]]);
    t.equal(p3.json().hasMore, false);
    // A cursor on the default audience continues with the newest custom one.
    t.same(idsOf(await h.request(ws.apiKey, 'GET', `/audiences?limit=1&cursor=${defaultId}`)).length, 1);
    t.notSame(idsOf(await h.request(ws.apiKey, 'GET', `/audiences?limit=1&cursor=${defaultId}`)), [defaultId]);

    const foreign = (await h.request(other.apiKey, 'POST', '/audiences', { name: 'theirs' })).json().id;
    const foreignDeleted = (await h.request(other.apiKey, 'POST', '/audiences', { name: 'theirs, gone' })).json().id;
    await h.request(other.apiKey, 'DELETE', `/audiences/${foreignDeleted}`);
    const tampered = made[1]!.slice(0, -1) + (made[1]!.endsWith('0') ? '1' : '0');
    const contactsCursor = await (async () => {
      await h.request(ws.apiKey, 'POST', '/contacts', { email: 'c1@example.com' });
      const c2 = (await h.request(ws.apiKey, 'POST', '/contacts', { email: 'c2@example.com' })).json().id;
      return [(await h.request(ws.apiKey, 'GET', '/contacts?limit=1')).json().nextCursor, c2];
    })();
    for (const cursor of [UNKNOWN, foreign, foreignDeleted, 'garbage', tampered, ...contactsCursor]) {
      t.same(
        errorOf(await h.request(ws.apiKey, 'GET', `/audiences?cursor=${encodeURIComponent(cursor)}`)),
        { status: 400, code: 'invalid_cursor', param: 'cursor' },
        cursor,
      );
    }
  },
);

t.test(
  'list paging: the cursor audience deleted between pages; the walk goes on from its place, no row twice, none skipped',
  async (t) => {
    const ws = await h.workspace();
    const made: string[] = [];
    for (let i = 0; i < 9; i++)
      made.push((await h.request(ws.apiKey, 'POST', '/audiences', { name: `A${i}` })).json().id);
    const defaultId = idsOf(await h.request(ws.apiKey, 'GET', '/audiences?limit=1'))[0];
    const expected = [defaultId, ...[...made].reverse()];

    // Two at a time; after each page its last row is deleted and a newer audience is added.
    const seen: string[] = [];
    let res = await h.request(ws.apiKey, 'GET', '/audiences?limit=2');
    seen.push(...idsOf(res));
    while (res.json().hasMore) {
      const cursor = res.json().nextCursor;
      t.equal((await h.request(ws.apiKey, 'DELETE', `/audiences/${cursor}`)).statusCode, 200);
      await h.request(ws.apiKey, 'POST', '/audiences', { name: 'late' });
      res = await h.request(ws.apiKey, 'GET', `/audiences?limit=2&cursor=${cursor}`);
      t.equal(res.statusCode, 200, res.body);
      seen.push(...idsOf(res));
    }
    t.same(seen, expected, 'every row there at the start, once, in order; the newer ones sort before the cursor');
    t.equal(res.json().nextCursor, null);

    // The default audience is the cursor: the walk goes on with the newest custom one, the one added last.
    const fromDefault = await h.request(ws.apiKey, 'GET', `/audiences?limit=1&cursor=${defaultId}`);
    t.equal(fromDefault.json().data[0].name, 'late');
    // A deleted cursor on the last page: nothing after it, an empty last page.
    const last = made[0]!;
    t.equal((await h.request(ws.apiKey, 'DELETE', `/audiences/${last}`)).statusCode, 200);
    const after = await h.request(ws.apiKey, 'GET', `/audiences?cursor=${last}`);
    t.same(after.json(), { object: 'list', data: [], hasMore: false, nextCursor: null });
  },
);

t.test('members: PUT and DELETE /audiences/{id}/contacts/{email}, contactCount fresh, errors', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const a = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'A' })).json();
  const c = (await h.request(ws.apiKey, 'POST', '/contacts', { email: 'x@example.com' })).json();
  let res = await h.request(ws.apiKey, 'PUT', `/audiences/${a.id}/contacts/X@example.com`);
  t.same(res.json(), {
    object: 'audience_membership',
    audienceId: a.id,
    contactId: c.id,
    email: 'x@example.com',
    member: true,
  });
  t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${a.id}`)).json().contactCount, 1);
  t.equal(
    (await h.request(ws.apiKey, 'PUT', `/audiences/${a.id}/contacts/${c.id}`)).statusCode,
    200,
    'again: no change',
  );
  t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${a.id}`)).json().contactCount, 1);
  t.ok((await h.request(ws.apiKey, 'GET', '/contacts/x@example.com')).json().audienceIds.includes(a.id));

  res = await h.request(ws.apiKey, 'DELETE', `/audiences/${a.id}/contacts/x@example.com`);
  t.equal(res.json().member, false);
  t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${a.id}`)).json().contactCount, 0);
  t.equal(
    (await h.request(ws.apiKey, 'DELETE', `/audiences/${a.id}/contacts/x@example.com`)).statusCode,
    200,
    'not a member: no error',
  );
  t.notOk((await h.request(ws.apiKey, 'GET', '/contacts/x@example.com')).json().audienceIds.includes(a.id));

  t.same(errorOf(await h.request(ws.apiKey, 'PUT', `/audiences/${UNKNOWN}/contacts/x@example.com`)), {
    status: 404,
    code: 'audience_not_found',
    param: 'id',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'PUT', `/audiences/${a.id}/contacts/nobody@example.com`)), {
    status: 404,
    code: 'contact_not_found',
    param: 'email',
  });
  t.same(errorOf(await h.request(other.apiKey, 'PUT', `/audiences/${a.id}/contacts/x@example.com`)), {
    status: 404,
    code: 'audience_not_found',
    param: 'id',
  });
  const theirs = (await h.request(other.apiKey, 'POST', '/audiences', { name: 'T' })).json().id;
  t.same(errorOf(await h.request(other.apiKey, 'PUT', `/audiences/${theirs}/contacts/${c.id}`)), {
    status: 404,
    code: 'contact_not_found',
    param: 'email',
  });

  // A deleted audience takes its memberships along.
  await h.request(ws.apiKey, 'PUT', `/audiences/${a.id}/contacts/x@example.com`);
  await h.request(ws.apiKey, 'DELETE', `/audiences/${a.id}`);
  t.same((await h.request(ws.apiKey, 'GET', '/contacts/x@example.com')).json().audienceIds.length, 1);
});

t.test('scopes and narrowed credentials on audiences routes', async (t) => {
  const ws = await h.workspace();
  const a = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'A' })).json();
  await h.request(ws.apiKey, 'POST', '/contacts', { email: 'x@example.com' });
  const reader = await keyWith(h, ws.apiKey, { scopes: ['audiences:read'] });
  t.equal((await h.request(reader, 'GET', '/audiences')).statusCode, 200);
  t.equal((await h.request(reader, 'GET', '/audiences/growth')).statusCode, 200);
  t.equal(errorOf(await h.request(reader, 'POST', '/audiences', { name: 'B' })).code, 'insufficient_scope');
  t.equal(
    errorOf(await h.request(reader, 'PUT', `/audiences/${a.id}/contacts/x@example.com`)).code,
    'insufficient_scope',
  );
  const scopes = ['contacts:read', 'contacts:write', 'audiences:read', 'audiences:write'];
  const narrow = await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['x@example.com'] });
  for (const [method, path, body] of [
    ['GET', '/audiences'],
    ['GET', '/audiences/growth'],
    ['GET', `/audiences/${a.id}`],
    ['POST', '/audiences', { name: 'B' }],
    ['PATCH', `/audiences/${a.id}`, { name: 'B' }],
    ['DELETE', `/audiences/${a.id}`],
    ['PUT', `/audiences/${a.id}/contacts/x@example.com`],
    ['DELETE', `/audiences/${a.id}/contacts/x@example.com`],
  ] as const) {
    t.same(
      errorOf(await h.request(narrow, method, path, body)),
      { status: 422, code: 'capability_unsupported', param: 'addressAllowlist' },
      `${method} ${path}`,
    );
  }
  t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${a.id}`)).json().name, 'A');
});

t.test('growth: validation', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const a = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'A' })).json().id;
  const theirs = (await h.request(other.apiKey, 'POST', '/audiences', { name: 'T' })).json().id;
  const g = (q: string) => h.request(ws.apiKey, 'GET', `/audiences/growth?${q}`);
  const fifty = Array.from({ length: 50 }, () => a).join(',');
  t.equal((await g(`audienceIds=${fifty}`)).statusCode, 200, '50 ids');
  t.same(errorOf(await g(`audienceIds=${fifty},${a}`)), {
    status: 422,
    code: 'invalid_parameter',
    param: 'audienceIds',
  });
  t.same(errorOf(await g(`audienceIds=${a},${UNKNOWN}`)), {
    status: 404,
    code: 'audience_not_found',
    param: 'audienceIds.1',
  });
  t.same(errorOf(await g(`audienceIds=${theirs}`)), {
    status: 404,
    code: 'audience_not_found',
    param: 'audienceIds.0',
  });
  t.equal((await g('audienceIds=')).json().audiences.length, 2, 'empty = all');
  for (const [q, param] of [
    ['days=0', 'days'],
    ['days=1096', 'days'],
    ['days=x', 'days'],
    ['minutes=0', 'minutes'],
    ['minutes=1576801', 'minutes'],
    ['grain=week', 'grain'],
    ['offsetMinutes=841', 'offsetMinutes'],
    ['offsetMinutes=-841', 'offsetMinutes'],
  ] as const)
    t.same(errorOf(await g(q)), { status: 422, code: 'invalid_parameter', param }, q);
  t.same(errorOf(await g('weeks=1')), { status: 422, code: 'unknown_parameter', param: 'weeks' });
  for (const q of [
    'days=1',
    'days=1095',
    'minutes=1',
    'minutes=1576800',
    'offsetMinutes=840',
    'offsetMinutes=-840',
    'grain=minute',
    'grain=hour',
  ]) {
    t.equal((await g(q)).statusCode, 200, q);
  }
  const res = (await g('days=30')).json();
  t.equal(Date.parse(res.until) - Date.parse(res.since), 30 * 86_400_000);
  const short = (await g('days=30&minutes=90')).json();
  t.equal(Date.parse(short.until) - Date.parse(short.since), 90 * 60_000, 'minutes overrides days');
});

t.test('growth over a past window, hand-checked', async (t) => {
  const ws = await h.workspace();
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  const ctx = h.system.commands;
  const D = 86_400_000;
  const T = Date.now();
  // Noon UTC of a day this many days back, so day buckets are not at a boundary.
  const day = (n: number) => new Date(Math.floor((T - n * D) / D) * D + 12 * 3_600_000).toISOString();
  const A = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'A' })).json().id;
  const B = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'B' })).json().id;
  const defaultId = (await h.request(ws.apiKey, 'GET', '/audiences')).json().data[0].id;

  await createContact(ctx, actor, { email: 'c1@example.com', audienceIds: [A], source: 'manual' }, day(20));
  await createContact(ctx, actor, { email: 'c2@example.com', audienceIds: [A], source: 'manual' }, day(5));
  await createContact(ctx, actor, { email: 'c4@example.com', audienceIds: [A, B], source: 'form' }, day(4));
  await createContact(ctx, actor, { email: 'c3@example.com', source: 'auto' }, day(3));
  await addToAudience(ctx, actor, { email: 'c3@example.com', audienceId: A }, day(2));
  await deleteContact(ctx, actor, 'c4@example.com', day(2));
  await removeFromAudience(ctx, actor, { email: 'c3@example.com', audienceId: A }, day(1));
  await addToAudience(ctx, actor, { email: 'c1@example.com', audienceId: B }, day(1));

  const key = (iso: string) => iso.slice(0, 10);
  const res = await h.request(ws.apiKey, 'GET', `/audiences/growth?days=7&audienceIds=${defaultId},${A},${B}`);
  t.equal(res.statusCode, 200, res.body);
  const g = res.json();
  const [def, a, b] = g.audiences;
  // Default: c1 before; c2, c4, c3 join; c4 leaves (deleted).
  t.match(def, {
    audienceId: defaultId,
    builtin: 'default',
    before: 1,
    subscribed: 3,
    unsubscribed: 1,
    added: 2,
    total: 3,
  });
  t.same(def.buckets, [
    { key: key(day(5)), subscribed: 1, unsubscribed: 0, added: 1 },
    { key: key(day(4)), subscribed: 1, unsubscribed: 0, added: 1 },
    { key: key(day(3)), subscribed: 1, unsubscribed: 0, added: 1 },
    { key: key(day(2)), subscribed: 0, unsubscribed: 1, added: -1 },
  ]);
  // A: c1 before; c2, c4, c3 join; c4 (deleted) and c3 (taken out) leave.
  t.match(a, { audienceId: A, before: 1, subscribed: 3, unsubscribed: 2, added: 1, total: 2 });
  t.same(a.buckets, [
    { key: key(day(5)), subscribed: 1, unsubscribed: 0, added: 1 },
    { key: key(day(4)), subscribed: 1, unsubscribed: 0, added: 1 },
    { key: key(day(2)), subscribed: 1, unsubscribed: 1, added: 0 },
    { key: key(day(1)), subscribed: 0, unsubscribed: 1, added: -1 },
  ]);
  // B: c4 joins and leaves; c1 joins.
  t.match(b, { audienceId: B, before: 0, subscribed: 2, unsubscribed: 1, added: 1, total: 1 });
  t.same(g.totals, { contacts: 3, memberships: 6, subscribed: 8, unsubscribed: 4, busiest: key(day(2)) });
  t.equal(Date.parse(g.until) - Date.parse(g.since), 7 * D);

  // Without the default audience, each person still once: A holds c1, c2; B holds c1.
  const ab = (await h.request(ws.apiKey, 'GET', `/audiences/growth?days=7&audienceIds=${A},${B}`)).json();
  t.same(ab.totals, { contacts: 2, memberships: 3, subscribed: 5, unsubscribed: 3, busiest: key(day(2)) });

  // A window that starts after everything: all "before", nothing moved.
  const recent = (await h.request(ws.apiKey, 'GET', `/audiences/growth?minutes=60&audienceIds=${A}`)).json();
  t.match(recent.audiences[0], { before: 2, total: 2, subscribed: 0, unsubscribed: 0, added: 0, buckets: [] });
  t.equal(recent.totals.busiest, null);

  // A long window sees c1 join too; hour grain and an offset shift the keys to local time.
  const long = (
    await h.request(ws.apiKey, 'GET', `/audiences/growth?days=30&grain=hour&offsetMinutes=-300&audienceIds=${A}`)
  ).json();
  t.match(long.audiences[0], { before: 0, subscribed: 4, unsubscribed: 2, total: 2 });
  const local = (iso: string, offset: number, len: number) =>
    new Date(Date.parse(iso) + offset * 60_000).toISOString().slice(0, len);
  t.same(
    long.audiences[0].buckets.map((x: any) => x.key),
    [day(20), day(5), day(4), day(2), day(1)].map((d) => local(d, -300, 13)),
  );
  const minute = (
    await h.request(ws.apiKey, 'GET', `/audiences/growth?days=30&grain=minute&offsetMinutes=330&audienceIds=${A}`)
  ).json();
  t.equal(minute.audiences[0].buckets[0].key, local(day(20), 330, 16));
  t.match(minute.audiences[0].buckets[0].key, /^\d{4}-\d\d-\d\dT\d\d:\d\d$/);
  t.match(long.audiences[0].buckets[0].key, /^\d{4}-\d\d-\d\dT\d\d$/);

  // The hourly counts and the rows agree, for windows that start and end inside hours, any grain and offset.
  const { audienceGrowth } = await import('../../projections/contacts/growth.ts');
  const { allAudiences } = await import('../../projections/contacts/queries.ts');
  const rows = await allAudiences(h.system.readDb, ws.workspaceId);
  for (const [sinceAgo, untilAgo] of [
    [7 * D, 0],
    [20 * D + 1234567, 1 * D + 7654321],
    [2 * D + 1800000, 2 * D - 1800000],
    [30 * D, 4 * D],
  ] as const) {
    for (const grain of ['day', 'hour', 'minute'] as const) {
      for (const offsetMinutes of [0, 60, -300, 330, 840]) {
        const w = { since: new Date(T - sinceAgo), until: new Date(T - untilAgo), grain, offsetMinutes };
        const fast = await audienceGrowth(h.system.readDb, rows, w);
        const slow = await audienceGrowth(h.system.readDb, rows, { ...w, rowsOnly: true });
        t.same(fast, slow, `${sinceAgo}..${untilAgo} ${grain} ${offsetMinutes}`);
      }
    }
  }
  const past = await audienceGrowth(h.system.readDb, rows, {
    since: new Date(Date.parse(day(20)) - 3_600_000),
    until: new Date(Date.parse(day(2)) - 3_600_000),
    grain: 'day',
    offsetMinutes: 0,
  });
  const pastA = past.audiences.find((x) => x.audienceId === A)!;
  t.match(
    pastA,
    { before: 0, subscribed: 3, unsubscribed: 0, total: 3 },
    'a window that ended in the past: c1, c2, c4 joined; the day-2 changes come after it',
  );
});

t.test(
  'growth totals.contacts: each person once over overlapping audiences, through removals, deleted contacts and audiences, at the end of past windows',
  async (t) => {
    const ws = await h.workspace();
    const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
    const ctx = h.system.commands;
    const { pool } = h.system.database;
    const db = h.system.readDb;
    const D = 86_400_000;
    const T = Date.now();
    const day = (n: number) => new Date(Math.floor((T - n * D) / D) * D + 12 * 3_600_000).toISOString();
    const audience = async (name: string): Promise<string> =>
      (await h.request(ws.apiKey, 'POST', '/audiences', { name })).json().id;
    const [A, B, C] = [await audience('A'), await audience('B'), await audience('C')];
    const defaultId = (await h.request(ws.apiKey, 'GET', '/audiences')).json().data[0].id;
    const contacts = async (...ids: string[]) => {
      const res = await h.request(ws.apiKey, 'GET', `/audiences/growth?days=30&audienceIds=${ids.join(',')}`);
      t.equal(res.statusCode, 200, res.body);
      return res.json().totals.contacts as number;
    };
    // The sets the projector keeps are those the membership rows give, and their counts add up.
    const setsAgree = async (when: string) => {
      const { rows } = await pool.query(
        `SELECT
         (SELECT coalesce(json_agg(s ORDER BY s.contact_id), '[]') FROM (SELECT contact_id, audience_ids FROM contact_audience_sets WHERE workspace_id = $1) s) AS kept,
         (SELECT coalesce(json_agg(s ORDER BY s.contact_id), '[]') FROM (
            SELECT m.contact_id, array_agg(m.audience_id ORDER BY m.audience_id) AS audience_ids
            FROM audience_members m JOIN audiences a ON a.id = m.audience_id AND a.builtin IS NULL
            WHERE m.workspace_id = $1 AND m.left_at IS NULL GROUP BY 1) s) AS derived,
         (SELECT coalesce(json_agg(s ORDER BY s.audience_ids), '[]') FROM (SELECT audience_ids, contacts FROM audience_set_counts WHERE workspace_id = $1) s) AS counts,
         (SELECT coalesce(json_agg(s ORDER BY s.audience_ids), '[]') FROM (
            SELECT audience_ids, count(*)::int AS contacts FROM contact_audience_sets WHERE workspace_id = $1 GROUP BY 1) s) AS counted`,
        [ws.workspaceId],
      );
      t.same(rows[0].kept, rows[0].derived, `${when}: contact sets follow the memberships`);
      t.same(rows[0].counts, rows[0].counted, `${when}: set counts follow the contact sets`);
    };

    await createContact(ctx, actor, { email: 'c1@example.com', audienceIds: [A, B], source: 'manual' }, day(20));
    await createContact(ctx, actor, { email: 'c2@example.com', audienceIds: [A], source: 'manual' }, day(10));
    await createContact(ctx, actor, { email: 'c3@example.com', audienceIds: [B, C], source: 'manual' }, day(9));
    await createContact(ctx, actor, { email: 'c4@example.com', source: 'manual' }, day(8));
    await addToAudience(ctx, actor, { email: 'c4@example.com', audienceId: C }, day(7));
    await createContact(ctx, actor, { email: 'c5@example.com', audienceIds: [A, B, C], source: 'manual' }, day(6));
    await setsAgree('created');
    // A: c1 c2 c5; B: c1 c3 c5; C: c3 c4 c5.
    t.equal(await contacts(A, B, C), 5);
    t.equal(await contacts(A, C), 5);
    t.equal(await contacts(B, C), 4);
    t.equal(await contacts(A, B), 4);
    t.equal(await contacts(A, B, defaultId), 5, 'with the default audience: everyone');

    await removeFromAudience(ctx, actor, { email: 'c1@example.com', audienceId: A }, day(5));
    await setsAgree('a removal');
    t.equal(await contacts(A, C), 4, 'c1 is out of A and never was in C');
    t.equal(await contacts(A, B), 4, 'c1 is still in B');
    await removeFromAudience(ctx, actor, { email: 'c1@example.com', audienceId: A }, day(5));
    t.equal(await contacts(A, C), 4, 'taking out again changes nothing');

    await deleteContact(ctx, actor, 'c2@example.com', day(4));
    await setsAgree('a contact deleted');
    t.equal(await contacts(A, C), 3);
    t.equal(await contacts(A, B), 3);

    await h.request(ws.apiKey, 'PUT', `/audiences/${A}/contacts/c4@example.com`);
    t.equal(await contacts(A, B), 4, 'c4 joins A');
    await h.request(ws.apiKey, 'DELETE', `/audiences/${A}/contacts/c4@example.com`);
    t.equal(await contacts(A, B), 3, 'and leaves it');

    await h.request(ws.apiKey, 'DELETE', `/audiences/${C}`);
    await setsAgree('an audience deleted');
    // A: c5; B: c1 c3 c5; c4 is in no audience but the default one.
    t.equal(await contacts(A, B), 3);
    const ab = (await h.request(ws.apiKey, 'GET', `/audiences/growth?days=30&audienceIds=${A},${B}`)).json();
    t.match(ab.totals, { contacts: 3, memberships: 4, subscribed: 7, unsubscribed: 3 });

    await addToAudience(ctx, actor, { email: 'c4@example.com', audienceId: A }, day(2));
    await createContact(ctx, actor, { email: 'c2@example.com', audienceIds: [B], source: 'manual' }, day(1));
    await setsAgree('rejoined and made again');
    t.equal(await contacts(A, B), 5, 'c1 c2 c3 c4 c5');

    // At the end of a past window: as the rows stood then (C's history went with it), whatever moved since.
    const { audienceGrowth } = await import('../../projections/contacts/growth.ts');
    const { allAudiences } = await import('../../projections/contacts/queries.ts');
    const rows = (await allAudiences(db, ws.workspaceId)).filter((a) => a.id === A || a.id === B);
    const atUntil = async (until: Date) =>
      (
        await pool.query(
          `SELECT count(DISTINCT contact_id)::int AS n FROM audience_members
         WHERE audience_id = ANY($1) AND joined_at < $2 AND (left_at IS NULL OR left_at >= $2)`,
          [[A, B], until],
        )
      ).rows[0].n as number;
    const expected = new Map([
      [day(5), 4],
      [day(3), 3],
      [day(9), 3],
      [day(15), 1],
      [day(25), 0],
    ]);
    for (const end of [day(25), day(15), day(9), day(5), day(3), day(2), day(1), new Date(T).toISOString()]) {
      for (const shift of [-3_600_000, 0, 3_600_000]) {
        const until = new Date(Date.parse(end) + shift);
        const past = await audienceGrowth(db, rows, {
          since: new Date(until.getTime() - 7 * D),
          until,
          grain: 'day',
          offsetMinutes: 0,
        });
        t.equal(past.totals.contacts, await atUntil(until), `until ${until.toISOString()}`);
      }
    }
    for (const [end, n] of expected) {
      const until = new Date(Date.parse(end) + 3_600_000);
      t.equal(
        (
          await audienceGrowth(db, rows, {
            since: new Date(until.getTime() - D),
            until,
            grain: 'hour',
            offsetMinutes: 0,
          })
        ).totals.contacts,
        n,
        `hand-checked at ${end}`,
      );
    }
  },
);
