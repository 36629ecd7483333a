import t from 'tap';
import { addSuppression } from '../../commands/suppressions/handlers.ts';
import type { SuppressionReason } from '../../domain/suppressions/events.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';

/** Bounce and complaint entries come from the sending pipeline, which calls the command directly. */
function pipelineAdds(
  h: TestApp,
  workspaceId: string,
  email: string,
  reason: SuppressionReason,
  detail: string | null,
  now = new Date().toISOString(),
) {
  return addSuppression(h.system.commands, { workspaceId, kind: 'system', id: null }, { email, reason, detail }, now);
}

async function storedEvents(h: TestApp, workspaceId: string, type: string) {
  const events = await h.system.store.readAll({ streamPrefix: `ws-${workspaceId}.suppression-`, limit: 10_000 });
  return events.filter((e) => e.type === type);
}

async function keyWith(h: TestApp, ownerKey: string, body: object): Promise<string> {
  const res = await h.request(ownerKey, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

const emailsOf = (res: { json: () => any }) => res.json().data.map((r: { email: string }) => r.email);

/**
 * One app for the file: each test makes workspaces of its own, and every list and read is
 * of one workspace, so the tests cannot see each other's rows.
 */
const h = await startTestApp(t);

t.test('POST creates (201), repeats answer the same row (200), GET reads it back', async (t) => {
  const ws = await h.workspace();

  const created = await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'someone@example.com' });
  t.equal(created.statusCode, 201);
  const row = created.json();
  t.match(row, {
    object: 'suppression',
    email: 'someone@example.com',
    reason: 'manual',
    detail: null,
    removable: true,
  });
  t.match(row.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  t.ok(!Number.isNaN(Date.parse(row.createdAt)));
  t.match(created.headers['request-id'], /^req_/);

  const read = await h.request(ws.apiKey, 'GET', `/suppressions/${row.id}`);
  t.equal(read.statusCode, 200);
  t.same(read.json(), row);

  for (const email of ['someone@example.com', '  SomeOne@Example.COM  ']) {
    const again = await h.request(ws.apiKey, 'POST', '/suppressions', { email });
    t.equal(again.statusCode, 200, `repeat of ${JSON.stringify(email)}`);
    t.same(again.json(), row);
  }

  const list = await h.request(ws.apiKey, 'GET', '/suppressions');
  t.equal(list.statusCode, 200);
  t.same(list.json(), { object: 'list', data: [row], hasMore: false, nextCursor: null });

  const added = await storedEvents(h, ws.workspaceId, 'SuppressionAdded');
  t.equal(added.length, 1, 'one event for the new entry, none for the repeats');
  t.match(added[0]!.data, {
    suppressionId: row.id,
    email: 'someone@example.com',
    reason: 'manual',
    detail: null,
    removable: true,
  });
  t.match(added[0]!.metadata, { workspaceId: ws.workspaceId, actor: { kind: 'apiKey' } });
});

t.test('concurrent POSTs of one address: exactly one 201 and one row', async (t) => {
  const ws = await h.workspace();
  const answers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      h.request(ws.apiKey, 'POST', '/suppressions', { email: i % 2 ? 'Race@Example.com' : 'race@example.com ' }),
    ),
  );
  t.same(answers.map((a) => a.statusCode).sort(), [200, 200, 200, 200, 200, 200, 200, 201]);
  t.equal(new Set(answers.map((a) => a.json().id)).size, 1, 'every answer carries the one entry');
  const list = await h.request(ws.apiKey, 'GET', '/suppressions');
  t.same(emailsOf(list), ['race@example.com']);
  t.equal((await storedEvents(h, ws.workspaceId, 'SuppressionAdded')).length, 1);
});

t.test('DELETE removes; the address can be added again under a new id', async (t) => {
  const ws = await h.workspace();
  const first = (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'gone@example.com' })).json();

  const removed = await h.request(ws.apiKey, 'DELETE', `/suppressions/${first.id}`);
  t.equal(removed.statusCode, 200);
  t.same(removed.json(), { object: 'suppression', id: first.id, deleted: true });
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/suppressions/${first.id}`)).statusCode,
    404,
    'read right after the delete sees it',
  );
  t.same(emailsOf(await h.request(ws.apiKey, 'GET', '/suppressions')), []);
  t.match((await h.request(ws.apiKey, 'DELETE', `/suppressions/${first.id}`)).json().error, {
    code: 'resource_not_found',
  });

  const again = await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'gone@example.com' });
  t.equal(again.statusCode, 201);
  t.not(again.json().id, first.id);
  t.equal((await h.request(ws.apiKey, 'GET', `/suppressions/${first.id}`)).statusCode, 404, 'the old id stays gone');
  t.equal((await h.request(ws.apiKey, 'GET', `/suppressions/${again.json().id}`)).statusCode, 200);

  t.equal((await storedEvents(h, ws.workspaceId, 'SuppressionAdded')).length, 2);
  t.match(await storedEvents(h, ws.workspaceId, 'SuppressionRemoved'), [
    { data: { suppressionId: first.id, email: 'gone@example.com' } },
  ]);
});

t.test('a hard bounce is permanent; a complaint is removable', async (t) => {
  const ws = await h.workspace();
  const bounce = await pipelineAdds(h, ws.workspaceId, 'Bounced@Example.com', 'bounce', '550 5.1.1 no such user');
  t.same(bounce.created, true);
  const complaint = await pipelineAdds(h, ws.workspaceId, 'annoyed@example.com', 'complaint', 'spam report');

  const read = await h.request(ws.apiKey, 'GET', `/suppressions/${bounce.suppressionId}`);
  t.match(read.json(), {
    email: 'bounced@example.com',
    reason: 'bounce',
    detail: '550 5.1.1 no such user',
    removable: false,
  });

  const refused = await h.request(ws.apiKey, 'DELETE', `/suppressions/${bounce.suppressionId}`);
  t.equal(refused.statusCode, 409);
  t.match(refused.json().error, { type: 'conflict_error', code: 'suppression_not_removable' });
  t.equal((await h.request(ws.apiKey, 'GET', `/suppressions/${bounce.suppressionId}`)).statusCode, 200, 'still there');

  const manual = await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'bounced@example.com' });
  t.equal(manual.statusCode, 200, 'present already, whatever its reason');
  t.match(manual.json(), { id: bounce.suppressionId, reason: 'bounce', removable: false });
  t.match(await pipelineAdds(h, ws.workspaceId, 'bounced@example.com', 'complaint', null), {
    created: false,
    suppressionId: bounce.suppressionId,
    entry: { reason: 'bounce' },
  });

  t.equal((await h.request(ws.apiKey, 'DELETE', `/suppressions/${complaint.suppressionId}`)).statusCode, 200);
  t.equal((await storedEvents(h, ws.workspaceId, 'SuppressionAdded')).length, 2);
});

t.test('q searches address, reason and detail, ignoring case, with % and _ taken literally', async (t) => {
  const ws = await h.workspace();
  await pipelineAdds(h, ws.workspaceId, 'full@example.com', 'bounce', 'Mailbox FULL: 100% used');
  await pipelineAdds(h, ws.workspaceId, 'first_last@example.org', 'complaint', 'Marked as spam');
  await pipelineAdds(h, ws.workspaceId, 'firstxlast@example.net', 'complaint', 'back\\slash');
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'Plain@Example.com' });

  const search = async (q: string) => {
    const res = await h.request(ws.apiKey, 'GET', `/suppressions?q=${encodeURIComponent(q)}`);
    t.equal(res.statusCode, 200, `q=${q}`);
    return [...emailsOf(res)].sort();
  };
  t.same(await search('EXAMPLE.COM'), ['full@example.com', 'plain@example.com'], 'address');
  t.same(await search('compl'), ['first_last@example.org', 'firstxlast@example.net'], 'reason');
  t.same(await search('manual'), ['plain@example.com'], 'reason of an API entry');
  t.same(await search('mailbox full'), ['full@example.com'], 'detail, any case');
  t.same(await search('%'), ['full@example.com'], '% matches only itself');
  t.same(await search('0%'), ['full@example.com']);
  t.same(await search('_'), ['first_last@example.org'], '_ matches only itself');
  t.same(await search('t_l'), ['first_last@example.org']);
  t.same(await search('\\'), ['firstxlast@example.net'], 'a backslash is no escape');
  t.same(await search('nowhere'), []);
  t.same(
    await search(''),
    ['first_last@example.org', 'firstxlast@example.net', 'full@example.com', 'plain@example.com'],
    'empty q filters nothing',
  );

  const both = await h.request(ws.apiKey, 'GET', '/suppressions?q=example&reason=complaint');
  t.same([...emailsOf(both)].sort(), ['first_last@example.org', 'firstxlast@example.net']);

  t.match((await h.request(ws.apiKey, 'GET', `/suppressions?q=${'a'.repeat(320)}`)).statusCode, 200);
  const tooLong = await h.request(ws.apiKey, 'GET', `/suppressions?q=${'a'.repeat(321)}`);
  t.equal(tooLong.statusCode, 422);
  t.match(tooLong.json().error, { code: 'invalid_parameter', param: 'q' });
});

t.test('reason filter', async (t) => {
  const ws = await h.workspace();
  await pipelineAdds(h, ws.workspaceId, 'b@example.com', 'bounce', null);
  await pipelineAdds(h, ws.workspaceId, 'c@example.com', 'complaint', null);
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'm@example.com' });
  for (const [reason, email] of [
    ['bounce', 'b@example.com'],
    ['complaint', 'c@example.com'],
    ['manual', 'm@example.com'],
  ]) {
    t.same(emailsOf(await h.request(ws.apiKey, 'GET', `/suppressions?reason=${reason}`)), [email]);
  }
  const bad = await h.request(ws.apiKey, 'GET', '/suppressions?reason=unsubscribe');
  t.equal(bad.statusCode, 422);
  t.match(bad.json().error, { code: 'invalid_parameter', param: 'reason' });
});

t.test('limit and cursor', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  for (const key of [ws.apiKey, other.apiKey]) {
    for (const email of ['one@example.com', 'two@example.com'])
      await h.request(key, 'POST', '/suppressions', { email });
  }

  for (const limit of [1, 100])
    t.equal((await h.request(ws.apiKey, 'GET', `/suppressions?limit=${limit}`)).statusCode, 200, `limit=${limit}`);
  for (const limit of ['0', '101', 'ten', '1.5']) {
    const res = await h.request(ws.apiKey, 'GET', `/suppressions?limit=${limit}`);
    t.equal(res.statusCode, 422, `limit=${limit}`);
    t.match(res.json().error, { type: 'validation_error', code: 'invalid_parameter', param: 'limit' });
  }

  const first = (await h.request(ws.apiKey, 'GET', '/suppressions?limit=1')).json();
  t.equal(first.hasMore, true);
  t.type(first.nextCursor, 'string');
  const second = (
    await h.request(ws.apiKey, 'GET', `/suppressions?limit=1&cursor=${encodeURIComponent(first.nextCursor)}`)
  ).json();
  t.same(second.data.length, 1);
  t.equal(second.hasMore, false);
  t.equal(second.nextCursor, null);

  const foreignCursor = (await h.request(other.apiKey, 'GET', '/suppressions?limit=1')).json().nextCursor;
  const [body, signature] = first.nextCursor.split('.');
  const forged = `${Buffer.from(JSON.stringify({ l: 'suppressions', w: ws.workspaceId, k: ['2000-01-01T00:00:00.000Z', UNKNOWN_ID] })).toString('base64url')}.${signature}`;
  for (const cursor of [foreignCursor, `${body}x.${signature}`, forged, 'not-a-cursor']) {
    const res = await h.request(ws.apiKey, 'GET', `/suppressions?cursor=${encodeURIComponent(cursor)}`);
    t.equal(res.statusCode, 400);
    t.match(res.json().error, { type: 'invalid_request_error', code: 'invalid_cursor', param: 'cursor' });
  }
});

t.test('a paging walk sees every older row once, in order, while rows are added', async (t) => {
  const ws = await h.workspace();
  // Several entries share one instant, so the walk also depends on the id tie-break.
  const base = Date.parse('2026-03-01T00:00:00.000Z');
  for (let i = 0; i < 11; i++) {
    await pipelineAdds(
      h,
      ws.workspaceId,
      `user${i}@example.com`,
      'complaint',
      null,
      new Date(base + Math.floor(i / 3) * 1000).toISOString(),
    );
  }
  const everything = (await h.request(ws.apiKey, 'GET', '/suppressions?limit=100')).json().data;
  t.equal(everything.length, 11);

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const query: string = cursor ? `&cursor=${encodeURIComponent(cursor)}` : '';
    const page: any = (await h.request(ws.apiKey, 'GET', `/suppressions?limit=3${query}`)).json();
    seen.push(...page.data.map((r: { id: string }) => r.id));
    cursor = page.nextCursor;
    pages++;
    await h.request(ws.apiKey, 'POST', '/suppressions', { email: `late${pages}@example.com` });
  } while (cursor);
  t.equal(pages, 4);
  t.same(
    seen,
    everything.map((r: { id: string }) => r.id),
  );
  t.equal((await h.request(ws.apiKey, 'GET', '/suppressions?limit=100')).json().data.length, 15);
});

t.test('a paging walk survives rows deleted between pages, the cursor row included', async (t) => {
  const ws = await h.workspace();
  const ids: string[] = [];
  for (let i = 0; i < 30; i++)
    ids.push((await h.request(ws.apiKey, 'POST', '/suppressions', { email: `gone${i}@example.com` })).json().id);
  const newestFirst = [...ids].reverse();
  const page1 = (await h.request(ws.apiKey, 'GET', '/suppressions')).json();
  t.equal(page1.data.length, 25, 'the default limit is 25');
  t.same(
    page1.data.map((r: { id: string }) => r.id),
    newestFirst.slice(0, 25),
  );
  // The row the cursor points at, and the first row after it, go before the next page is read.
  for (const id of [newestFirst[24]!, newestFirst[25]!])
    t.equal((await h.request(ws.apiKey, 'DELETE', `/suppressions/${id}`)).statusCode, 200);
  const page2 = (
    await h.request(ws.apiKey, 'GET', `/suppressions?cursor=${encodeURIComponent(page1.nextCursor)}`)
  ).json();
  t.same(
    page2.data.map((r: { id: string }) => r.id),
    newestFirst.slice(26),
    'the walk goes on after the deleted rows, nothing skipped or repeated',
  );
  t.equal(page2.hasMore, false);
});

t.test('ids of another workspace, unknown and malformed ids are all 404', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const foreign = (await h.request(other.apiKey, 'POST', '/suppressions', { email: 'theirs@example.com' })).json();
  for (const id of [foreign.id, UNKNOWN_ID, 'not-a-uuid', `${foreign.id}x`]) {
    for (const method of ['GET', 'DELETE'] as const) {
      const res = await h.request(ws.apiKey, method, `/suppressions/${id}`);
      t.equal(res.statusCode, 404, `${method} ${id}`);
      t.match(res.json().error, { type: 'not_found_error', code: 'resource_not_found' });
    }
  }
  t.same(emailsOf(await h.request(ws.apiKey, 'GET', '/suppressions')), [], 'lists hold only the own workspace');
  t.equal(
    (await h.request(other.apiKey, 'GET', `/suppressions/${foreign.id}`)).statusCode,
    200,
    'the foreign entry is untouched',
  );
});

t.test('a narrowed key reads the whole list but cannot change it', async (t) => {
  const ws = await h.workspace();
  const existing = (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'elsewhere@other.org' })).json();
  const scopes = ['settings:read', 'settings:write'];
  const narrowKeys = [
    await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['sales@example.com'] }),
    await keyWith(h, ws.apiKey, { scopes, domainAllowlist: ['example.com'] }),
  ];
  for (const key of narrowKeys) {
    const list = await h.request(key, 'GET', '/suppressions');
    t.same(emailsOf(list), ['elsewhere@other.org'], 'whole-workspace list');
    t.equal((await h.request(key, 'GET', `/suppressions/${existing.id}`)).statusCode, 200);

    const add = await h.request(key, 'POST', '/suppressions', { email: 'sales@example.com' });
    t.equal(add.statusCode, 422);
    t.match(add.json().error, { type: 'validation_error', code: 'capability_unsupported', param: null });
    const remove = await h.request(key, 'DELETE', `/suppressions/${existing.id}`);
    t.equal(remove.statusCode, 422);
    t.match(remove.json().error, { code: 'capability_unsupported', param: null });
  }
  t.same(emailsOf(await h.request(ws.apiKey, 'GET', '/suppressions')), ['elsewhere@other.org'], 'nothing changed');
  t.equal((await storedEvents(h, ws.workspaceId, 'SuppressionAdded')).length, 1);
  t.equal((await storedEvents(h, ws.workspaceId, 'SuppressionRemoved')).length, 0);
});

t.test('scopes', async (t) => {
  const ws = await h.workspace();
  const existing = (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'x@example.com' })).json();
  const reader = await keyWith(h, ws.apiKey, { scopes: ['settings:read'] });
  const stranger = await keyWith(h, ws.apiKey, { scopes: ['emails:send'] });

  t.equal((await h.request(reader, 'GET', '/suppressions')).statusCode, 200);
  for (const [method, path, body] of [
    ['POST', '/suppressions', { email: 'y@example.com' }],
    ['DELETE', `/suppressions/${existing.id}`, undefined],
  ] as const) {
    const res = await h.request(reader, method, path, body);
    t.equal(res.statusCode, 403, `${method} without settings:write`);
    t.match(res.json().error, { type: 'permission_error', code: 'insufficient_scope' });
  }
  for (const path of ['/suppressions', `/suppressions/${existing.id}`]) {
    t.match(
      (await h.request(stranger, 'GET', path)).json().error,
      { code: 'insufficient_scope' },
      `GET ${path} without settings:read`,
    );
  }
  t.equal((await h.request(null, 'GET', '/suppressions')).statusCode, 401);
  t.same(emailsOf(await h.request(ws.apiKey, 'GET', '/suppressions')), ['x@example.com']);
});

t.test('request validation', async (t) => {
  const ws = await h.workspace();
  const expect422 = async (body: unknown, code: string, param: string) => {
    const res = await h.request(ws.apiKey, 'POST', '/suppressions', body);
    t.equal(res.statusCode, 422, JSON.stringify(body));
    t.match(res.json().error, { type: 'validation_error', code, param });
  };
  await expect422({ email: 'a@example.com', reason: 'bounce' }, 'unknown_parameter', 'reason');
  await expect422({}, 'invalid_parameter', 'email');
  await expect422({ email: 'not an address' }, 'invalid_parameter', 'email');
  await expect422({ email: '   ' }, 'invalid_parameter', 'email');
  await expect422({ email: 42 }, 'invalid_parameter', 'email');
  await expect422({ email: `${'a'.repeat(310)}@example.com` }, 'invalid_parameter', 'email');

  const malformed = await h.request(ws.apiKey, 'POST', '/suppressions', '{"email": "a@example.com"');
  t.equal(malformed.statusCode, 400);
  t.match(malformed.json().error, { type: 'invalid_request_error', code: 'malformed_json' });

  const unknownQuery = await h.request(ws.apiKey, 'GET', '/suppressions?sort=asc');
  t.equal(unknownQuery.statusCode, 422);
  t.match(unknownQuery.json().error, { code: 'unknown_parameter', param: 'sort' });

  t.same(emailsOf(await h.request(ws.apiKey, 'GET', '/suppressions')), [], 'nothing was added');
});

t.test('the OpenAPI document describes the suppression routes', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  t.ok(doc.paths['/suppressions']?.get && doc.paths['/suppressions']?.post);
  t.ok(doc.paths['/suppressions/{id}']?.get && doc.paths['/suppressions/{id}']?.delete);
});

t.test('a rebuilt suppression list equals the live one, indexes included', async (t) => {
  const ws = await h.workspace();
  await pipelineAdds(h, ws.workspaceId, 'hard@example.com', 'bounce', '550 no such user');
  const cycled = (await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'cycled@example.com' })).json();
  await h.request(ws.apiKey, 'DELETE', `/suppressions/${cycled.id}`);
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'cycled@example.com' });
  await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'kept@example.com' });

  const { db, pool } = h.system.database;
  const projector = h.system.runner.projectors.find((p) => p.name === 'suppressions')!;
  const rows = async (schema: string) => (await pool.query(`SELECT * FROM ${schema}.suppressions ORDER BY id`)).rows;
  const indexes = async (schema: string) =>
    (
      await pool.query(
        `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'suppressions' ORDER BY 1`,
        [schema],
      )
    ).rows.map((r) => r.indexname);

  await rebuildProjection(db, pool, h.system.store, h.system.runner, projector, {
    swap: false,
    schema: 'compare_suppressions',
  });
  t.same(await rows('compare_suppressions'), await rows('public'));
  const liveNames = await indexes('public');
  t.same(await indexes('compare_suppressions'), liveNames);
  t.ok(
    ['suppressions_email_search', 'suppressions_detail_search'].every((i) => liveNames.includes(i)),
    'pg_trgm indexes in place',
  );
  await pool.query('DROP SCHEMA compare_suppressions CASCADE');

  const live = await rows('public');
  const liveIndexes = await indexes('public');
  await rebuildProjection(db, pool, h.system.store, h.system.runner, projector);
  t.same(await rows('public'), live, 'swapped in');
  t.same(await indexes('public'), liveIndexes);
  t.equal((await h.request(ws.apiKey, 'POST', '/suppressions', { email: 'after@example.com' })).statusCode, 201);
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/suppressions?q=after')).json().data.length,
    1,
    'the live projector writes into the swapped table',
  );
});
