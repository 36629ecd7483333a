import t from 'tap';
import { touchContact } from '../../commands/contacts/handlers.ts';
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
const emailsOf = (res: { json: () => any }) => res.json().data.map((r: { email: string }) => r.email);
const attrs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));

/**
 * One app for the file: each test makes workspaces of its own, and every list and read is
 * of one workspace, so the tests cannot see each other's rows.
 */
const h = await startTestApp(t);

t.test('POST creates a manual contact in the default audience; GET reads it by address or id', async (t) => {
  const ws = await h.workspace();
  const res = await h.request(ws.apiKey, 'POST', '/contacts', {
    email: '  Ada.Lovelace@Example.COM ',
    name: ' Ada ',
    notes: 'met at the fair',
    attributes: { plan: '  pro  ', Team_1: 'x' },
  });
  t.equal(res.statusCode, 201, res.body);
  const c = res.json();
  t.match(c, {
    object: 'contact',
    id: /^con_[0-9a-f]{24}$/,
    email: 'ada.lovelace@example.com',
    name: 'Ada',
    notes: 'met at the fair',
    attributes: { plan: 'pro', Team_1: 'x' },
    source: 'manual',
    lastSeenAt: null,
  });
  t.equal(c.audienceIds.length, 1, 'joins the default audience');
  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences')).json().data;
  t.equal(audiences[0].builtin, 'default');
  t.same(c.audienceIds, [audiences[0].id]);
  t.equal(audiences[0].contactCount, 1);

  for (const path of [
    '/contacts/ada.lovelace@example.com',
    `/contacts/${c.id}`,
    '/contacts/%20ADA.Lovelace@example.com%20',
  ]) {
    const got = await h.request(ws.apiKey, 'GET', path);
    t.equal(got.statusCode, 200, path);
    t.same(got.json(), c, path);
  }
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/contacts/nobody@example.com')), {
    status: 404,
    code: 'contact_not_found',
    param: 'email',
  });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/contacts/con_000000000000000000000000')), {
    status: 404,
    code: 'contact_not_found',
    param: 'email',
  });
});

t.test('a foreign workspace sees none of it: 404 by address and by id, and an empty list', async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const c = (await h.request(ws.apiKey, 'POST', '/contacts', { email: 'x@example.com' })).json();
  for (const path of ['/contacts/x@example.com', `/contacts/${c.id}`]) {
    t.same(errorOf(await h.request(other.apiKey, 'GET', path)), {
      status: 404,
      code: 'contact_not_found',
      param: 'email',
    });
    t.same(errorOf(await h.request(other.apiKey, 'PATCH', path, { name: 'y' })), {
      status: 404,
      code: 'contact_not_found',
      param: 'email',
    });
    t.same(errorOf(await h.request(other.apiKey, 'DELETE', path)), {
      status: 404,
      code: 'contact_not_found',
      param: 'email',
    });
  }
  t.same(emailsOf(await h.request(other.apiKey, 'GET', '/contacts')), []);
  // The other workspace may have its own contact with the same address.
  t.equal((await h.request(other.apiKey, 'POST', '/contacts', { email: 'x@example.com' })).statusCode, 201);
});

t.test('duplicate create is 409 contact_exists, also under 8 concurrent creates', async (t) => {
  const ws = await h.workspace();
  t.equal((await h.request(ws.apiKey, 'POST', '/contacts', { email: 'a@example.com', name: 'First' })).statusCode, 201);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/contacts', { email: ' A@EXAMPLE.com', name: 'Second' })), {
    status: 409,
    code: 'contact_exists',
    param: 'email',
  });
  t.equal(
    (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com')).json().name,
    'First',
    'the duplicate changed nothing',
  );

  const results = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      h.request(ws.apiKey, 'POST', '/contacts', { email: 'race@example.com', name: `r${i}` }),
    ),
  );
  const statuses = results.map((r) => r.statusCode).sort();
  t.same(statuses, [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const r of results.filter((r) => r.statusCode === 409)) t.equal(r.json().error.code, 'contact_exists');
  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences')).json().data;
  t.equal(audiences.filter((a: any) => a.builtin === 'default').length, 1, 'one default audience');
  t.equal(audiences[0].contactCount, 2);
});

t.test('validation of create: address, attributes at the edge and one past, audienceIds', async (t) => {
  const ws = await h.workspace();
  const post = (body: object) => h.request(ws.apiKey, 'POST', '/contacts', body);
  t.same(errorOf(await post({})), { status: 422, code: 'invalid_parameter', param: 'email' });
  t.same(errorOf(await post({ email: 'not an address' })), { status: 422, code: 'invalid_parameter', param: 'email' });
  t.same(errorOf(await post({ email: 'a@example.com', source: 'auto' })), {
    status: 422,
    code: 'unknown_parameter',
    param: 'source',
  });
  t.same(errorOf(await post({ email: 'a@example.com', lastSeenAt: null })), {
    status: 422,
    code: 'unknown_parameter',
    param: 'lastSeenAt',
  });

  t.equal((await post({ email: 'fifty@example.com', attributes: attrs(50) })).statusCode, 201, '50 attributes');
  t.same(errorOf(await post({ email: 'fiftyone@example.com', attributes: attrs(51) })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'attributes',
  });
  const key64 = `K${'a'.repeat(63)}`;
  t.equal(
    (await post({ email: 'key64@example.com', attributes: { [key64]: 'v' } })).statusCode,
    201,
    '64-character key',
  );
  t.equal(
    errorOf(await post({ email: 'key65@example.com', attributes: { [`${key64}a`]: 'v' } })).code,
    'invalid_parameter',
  );
  for (const bad of ['1abc', '_abc', 'a-b', 'a b', '']) {
    t.equal(
      errorOf(await post({ email: 'badkey@example.com', attributes: { [bad]: 'v' } })).code,
      'invalid_parameter',
      `key ${JSON.stringify(bad)}`,
    );
  }
  t.equal(
    (await post({ email: 'v500@example.com', attributes: { a: `  ${'é'.repeat(500)}  ` } })).statusCode,
    201,
    '500 characters after trimming',
  );
  t.same(errorOf(await post({ email: 'v501@example.com', attributes: { a: 'x'.repeat(501) } })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'attributes.a',
  });
  t.same(errorOf(await post({ email: 'num@example.com', attributes: { a: 5 } })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'attributes.a',
  });
  t.same(errorOf(await post({ email: 'n@example.com', name: 'x'.repeat(201) })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'name',
  });

  const ids: string[] = [];
  for (let i = 0; i < 26; i++)
    ids.push((await h.request(ws.apiKey, 'POST', '/audiences', { name: `A${i}` })).json().id);
  const ok = await post({ email: 'many@example.com', audienceIds: ids.slice(0, 25) });
  t.equal(ok.statusCode, 201, '25 audienceIds');
  t.equal(ok.json().audienceIds.length, 26, 'the default audience and the 25');
  t.same(errorOf(await post({ email: 'toomany@example.com', audienceIds: ids })), {
    status: 422,
    code: 'invalid_parameter',
    param: 'audienceIds',
  });
  t.same(errorOf(await post({ email: 'unknown@example.com', audienceIds: [ids[0], 'aud_000000000000000000000000'] })), {
    status: 404,
    code: 'audience_not_found',
    param: 'audienceIds.1',
  });
  t.same(errorOf(await post({ email: 'unknown@example.com', audienceIds: ['nonsense'] })), {
    status: 404,
    code: 'audience_not_found',
    param: 'audienceIds.0',
  });
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/unknown@example.com')).statusCode, 404, 'nothing saved');
  t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${ids[0]}`)).json().contactCount, 1);
});

t.test('scopes: audienceIds need audiences:write too, refused before saving', async (t) => {
  const ws = await h.workspace();
  const audienceId = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'Newsletter' })).json().id;
  const writer = await keyWith(h, ws.apiKey, { scopes: ['contacts:write', 'contacts:read'] });
  t.same(errorOf(await h.request(writer, 'POST', '/contacts', { email: 'a@example.com', audienceIds: [audienceId] })), {
    status: 403,
    code: 'insufficient_scope',
    param: 'audienceIds',
  });
  t.equal((await h.request(writer, 'GET', '/contacts/a@example.com')).statusCode, 404, 'nothing saved');
  t.equal(
    (await h.request(writer, 'POST', '/contacts', { email: 'a@example.com', audienceIds: [] })).statusCode,
    201,
    'an empty list needs no more',
  );
  const both = await keyWith(h, ws.apiKey, { scopes: ['contacts:write', 'audiences:write'] });
  t.equal(
    (await h.request(both, 'POST', '/contacts', { email: 'b@example.com', audienceIds: [audienceId] })).statusCode,
    201,
  );

  const reader = await keyWith(h, ws.apiKey, { scopes: ['contacts:read'] });
  t.equal(errorOf(await h.request(reader, 'POST', '/contacts', { email: 'c@example.com' })).code, 'insufficient_scope');
  t.equal(
    errorOf(await h.request(reader, 'PATCH', '/contacts/a@example.com', { name: 'n' })).code,
    'insufficient_scope',
  );
  t.equal(errorOf(await h.request(reader, 'DELETE', '/contacts/a@example.com')).code, 'insufficient_scope');
  t.equal((await h.request(reader, 'GET', '/contacts')).statusCode, 200);
  const none = await keyWith(h, ws.apiKey, { scopes: ['templates:read'] });
  t.equal(errorOf(await h.request(none, 'GET', '/contacts')).status, 403);
  t.equal(errorOf(await h.request(none, 'GET', '/contacts/a@example.com')).status, 403);
});

t.test(
  'a narrowed credential is refused on every contacts route with capability_unsupported on addressAllowlist',
  async (t) => {
    const ws = await h.workspace();
    await h.request(ws.apiKey, 'POST', '/contacts', { email: 'a@example.com' });
    const scopes = ['contacts:read', 'contacts:write', 'audiences:read', 'audiences:write'];
    const narrowKeys = [
      await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['sales@example.com'] }),
      await keyWith(h, ws.apiKey, { scopes, domainAllowlist: ['example.com'] }),
    ];
    for (const key of narrowKeys) {
      for (const [method, path, body] of [
        ['GET', '/contacts'],
        ['GET', '/contacts/a@example.com'],
        ['POST', '/contacts', { email: 'sales@example.com' }],
        ['POST', '/contacts', {}],
        ['PATCH', '/contacts/a@example.com', { name: 'x' }],
        ['DELETE', '/contacts/a@example.com'],
      ] as const) {
        t.same(
          errorOf(await h.request(key, method, path, body)),
          { status: 422, code: 'capability_unsupported', param: 'addressAllowlist' },
          `${method} ${path}`,
        );
      }
    }
    t.equal((await h.request(ws.apiKey, 'GET', '/contacts/a@example.com')).statusCode, 200, 'nothing changed');
    t.equal((await h.request(ws.apiKey, 'GET', '/contacts/sales@example.com')).statusCode, 404);
  },
);

t.test(
  'PATCH merges attributes key by key, null removes, notes null clears; address, source and lastSeenAt are immutable',
  async (t) => {
    const ws = await h.workspace();
    const created = (
      await h.request(ws.apiKey, 'POST', '/contacts', {
        email: 'a@example.com',
        name: 'A',
        notes: 'n',
        attributes: { a: '1', b: '2' },
      })
    ).json();
    const patch = (path: string, body: object) => h.request(ws.apiKey, 'PATCH', path, body);

    let res = await patch('/contacts/A@example.com', { attributes: { b: null, c: ' 3 ' } });
    t.equal(res.statusCode, 200, res.body);
    t.same(res.json().attributes, { a: '1', c: '3' });
    t.equal(res.json().name, 'A', 'omitted keeps');
    t.equal(res.json().notes, 'n');
    t.same(
      (await h.request(ws.apiKey, 'GET', '/contacts/a@example.com')).json().attributes,
      { a: '1', c: '3' },
      'read-your-writes',
    );

    res = await patch(`/contacts/${created.id}`, { notes: null, name: 'Ada' });
    t.match(res.json(), {
      notes: null,
      name: 'Ada',
      email: 'a@example.com',
      source: 'manual',
      attributes: { a: '1', c: '3' },
    });
    res = await patch('/contacts/a@example.com', { name: null });
    t.equal(res.json().name, null);
    const before = res.json().updatedAt;
    res = await patch('/contacts/a@example.com', { name: null, attributes: { zz: null } });
    t.equal(res.json().updatedAt, before, 'a change that changes nothing writes nothing');

    for (const [field, value] of [
      ['email', 'b@example.com'],
      ['source', 'auto'],
      ['lastSeenAt', '2026-01-01T00:00:00Z'],
      ['lastSeenAt', null],
    ] as const) {
      t.same(
        errorOf(await patch('/contacts/a@example.com', { [field]: value })),
        { status: 422, code: 'invalid_parameter', param: field },
        field,
      );
    }
    t.same(errorOf(await patch('/contacts/a@example.com', { id: 'x' })), {
      status: 422,
      code: 'unknown_parameter',
      param: 'id',
    });
    t.same(errorOf(await patch('/contacts/nobody@example.com', { name: 'x' })), {
      status: 404,
      code: 'contact_not_found',
      param: 'email',
    });

    // 50 after the merge is the edge; one more is refused and changes nothing.
    t.equal((await patch('/contacts/a@example.com', { attributes: attrs(48) })).json().attributes.k47, 'v47');
    t.same(errorOf(await patch('/contacts/a@example.com', { attributes: { one: 'more' } })), {
      status: 422,
      code: 'invalid_parameter',
      param: 'attributes',
    });
    t.equal(
      Object.keys((await patch('/contacts/a@example.com', { attributes: { one: 'more', a: null } })).json().attributes)
        .length,
      50,
      'a removal makes room in the same change',
    );
    t.same(errorOf(await patch('/contacts/a@example.com', { attributes: attrs(51) })), {
      status: 422,
      code: 'invalid_parameter',
      param: 'attributes',
    });
    t.same(errorOf(await patch('/contacts/a@example.com', { attributes: { a: 'x'.repeat(501) } })), {
      status: 422,
      code: 'invalid_parameter',
      param: 'attributes.a',
    });
  },
);

t.test(
  'DELETE takes the contact out of the book and its audiences; the address may come back as a new contact',
  async (t) => {
    const ws = await h.workspace();
    const audienceId = (await h.request(ws.apiKey, 'POST', '/audiences', { name: 'N' })).json().id;
    const c = (
      await h.request(ws.apiKey, 'POST', '/contacts', { email: 'a@example.com', audienceIds: [audienceId] })
    ).json();
    t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${audienceId}`)).json().contactCount, 1);
    const res = await h.request(ws.apiKey, 'DELETE', `/contacts/${c.id}`);
    t.same(res.json(), { object: 'contact', id: c.id, email: 'a@example.com', deleted: true });
    t.equal((await h.request(ws.apiKey, 'GET', '/contacts/a@example.com')).statusCode, 404);
    t.equal((await h.request(ws.apiKey, 'GET', `/audiences/${audienceId}`)).json().contactCount, 0);
    t.same(errorOf(await h.request(ws.apiKey, 'DELETE', '/contacts/a@example.com')), {
      status: 404,
      code: 'contact_not_found',
      param: 'email',
    });
    const again = await h.request(ws.apiKey, 'POST', '/contacts', { email: 'a@example.com' });
    t.equal(again.statusCode, 201);
    t.not(again.json().id, c.id, 'a new contact');
    t.equal((await h.request(ws.apiKey, 'GET', `/contacts/${c.id}`)).statusCode, 404, 'the old id stays gone');
  },
);

t.test(
  'list: lastSeenAt descending, never-seen last, id as the tiebreak; paging holds across rows added between pages',
  async (t) => {
    const ws = await h.workspace();
    const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
    const made: Record<string, string> = {};
    for (const n of [1, 2, 3, 4, 5, 6])
      made[n] = (
        await h.request(ws.apiKey, 'POST', '/contacts', { email: `c${n}@example.com`, name: `Person ${n}` })
      ).json().id;
    const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
    const thirty = at(30);
    const ten = at(10);
    await touchContact(h.system.commands, actor, 'c2@example.com', thirty);
    await touchContact(h.system.commands, actor, 'c5@example.com', ten);
    await touchContact(h.system.commands, actor, 'c4@example.com', thirty);
    const neverSeen = ['c1', 'c3', 'c6']
      .sort((a, b) => (made[b.slice(1)]! < made[a.slice(1)]! ? -1 : 1))
      .map((e) => `${e}@example.com`);
    const seenTie = ['c2', 'c4']
      .sort((a, b) => (made[b.slice(1)]! < made[a.slice(1)]! ? -1 : 1))
      .map((e) => `${e}@example.com`);
    const expected = ['c5@example.com', ...seenTie, ...neverSeen];
    const all = await h.request(ws.apiKey, 'GET', '/contacts');
    t.same(emailsOf(all), expected);
    t.equal(all.json().data[0].lastSeenAt, ten);
    t.equal(all.json().data[1].lastSeenAt, thirty);
    t.equal(all.json().data[5].lastSeenAt, null);

    // Walk two at a time; add a never-seen and a seen contact between pages: the walk neither repeats nor skips what was there.
    const seen: string[] = [];
    let res = await h.request(ws.apiKey, 'GET', '/contacts?limit=2');
    seen.push(...emailsOf(res));
    await h.request(ws.apiKey, 'POST', '/contacts', { email: 'late@example.com' });
    await touchContact(h.system.commands, actor, 'c1@example.com', at(1));
    while (res.json().hasMore) {
      res = await h.request(ws.apiKey, 'GET', `/contacts?limit=2&cursor=${encodeURIComponent(res.json().nextCursor)}`);
      t.equal(res.statusCode, 200, res.body);
      seen.push(...emailsOf(res));
    }
    t.equal(new Set(seen).size, seen.length, 'no row twice');
    for (const e of expected.filter((e) => e !== 'c1@example.com')) t.ok(seen.includes(e), `${e} seen`);
    t.equal(res.json().nextCursor, null);

    t.same(errorOf(await h.request(ws.apiKey, 'GET', '/contacts?cursor=garbage')), {
      status: 400,
      code: 'invalid_cursor',
      param: 'cursor',
    });
    const other = await h.workspace();
    const cursor = (await h.request(ws.apiKey, 'GET', '/contacts?limit=1')).json().nextCursor;
    t.same(errorOf(await h.request(other.apiKey, 'GET', `/contacts?cursor=${encodeURIComponent(cursor)}`)), {
      status: 400,
      code: 'invalid_cursor',
      param: 'cursor',
    });
    const suppressionCursor = await (async () => {
      await h.request(ws.apiKey, 'POST', '/suppressions', { email: 's1@example.com' });
      await h.request(ws.apiKey, 'POST', '/suppressions', { email: 's2@example.com' });
      return (await h.request(ws.apiKey, 'GET', '/suppressions?limit=1')).json().nextCursor;
    })();
    t.equal(
      errorOf(await h.request(ws.apiKey, 'GET', `/contacts?cursor=${encodeURIComponent(suppressionCursor)}`)).code,
      'invalid_cursor',
      'a cursor of another list',
    );
  },
);

t.test('list: the cursor contact deleted between pages; a tampered cursor is invalid_cursor', async (t) => {
  const ws = await h.workspace();
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  for (let n = 1; n <= 7; n++) await h.request(ws.apiKey, 'POST', '/contacts', { email: `c${n}@example.com` });
  // Seen ones first, never-seen after: the walk crosses from one to the other.
  for (const n of [2, 5, 6])
    await touchContact(h.system.commands, actor, `c${n}@example.com`, new Date(Date.now() - n * 60_000).toISOString());
  const expected = emailsOf(await h.request(ws.apiKey, 'GET', '/contacts'));

  const seen: string[] = [];
  let res = await h.request(ws.apiKey, 'GET', '/contacts?limit=2');
  seen.push(...emailsOf(res));
  while (res.json().hasMore) {
    t.equal((await h.request(ws.apiKey, 'DELETE', `/contacts/${seen.at(-1)}`)).statusCode, 200);
    res = await h.request(ws.apiKey, 'GET', `/contacts?limit=2&cursor=${encodeURIComponent(res.json().nextCursor)}`);
    t.equal(res.statusCode, 200, res.body);
    seen.push(...emailsOf(res));
  }
  t.same(seen, expected, 'each row once, in order, none skipped');

  const cursor: string = (await h.request(ws.apiKey, 'GET', '/contacts?limit=1')).json().nextCursor;
  const [body, signature] = cursor.split('.') as [string, string];
  const key = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
  const forged = Buffer.from(JSON.stringify({ ...key, k: [null, 'con_000000000000000000000000'] })).toString(
    'base64url',
  );
  for (const tampered of [
    `${forged}.${signature}`,
    `${body}.${signature.slice(0, -1)}${signature.endsWith('A') ? 'B' : 'A'}`,
    body,
  ]) {
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/contacts?cursor=${encodeURIComponent(tampered)}`)), {
      status: 400,
      code: 'invalid_cursor',
      param: 'cursor',
    });
  }
});

t.test('list: limit 1 to 200 (default 50), source and q filters', async (t) => {
  const ws = await h.workspace();
  const actor = { workspaceId: ws.workspaceId, kind: 'system' as const, id: null };
  const { createContact } = await import('../../commands/contacts/handlers.ts');
  for (let i = 0; i < 201; i++) {
    await createContact(
      h.system.commands,
      actor,
      {
        email: `p${i}@bulk.example`,
        name: i === 7 ? 'Grace 100% Hopper' : `Bulk ${i}`,
        source: i % 2 ? 'auto' : 'form',
      },
      new Date().toISOString(),
    );
  }
  await h.request(ws.apiKey, 'POST', '/contacts', { email: 'ada@lovelace.example', name: 'Ada Lovelace' });
  const page = (q: string) => h.request(ws.apiKey, 'GET', `/contacts?${q}`);
  t.equal((await page('')).json().data.length, 50, 'default 50');
  const full = (await page('limit=200')).json();
  t.equal(full.data.length, 200);
  t.equal(full.hasMore, true);
  t.equal((await page('limit=1')).json().data.length, 1);
  for (const bad of ['limit=0', 'limit=201', 'limit=x'])
    t.same(errorOf(await page(bad)), { status: 422, code: 'invalid_parameter', param: 'limit' }, bad);

  const manual = (await page('source=manual')).json();
  t.same(
    manual.data.map((r: any) => r.email),
    ['ada@lovelace.example'],
  );
  t.equal((await page('source=auto&limit=200')).json().data.length, 100);
  t.equal((await page('source=form&limit=200')).json().data.length, 101);
  t.same(errorOf(await page('source=other')), { status: 422, code: 'invalid_parameter', param: 'source' });

  t.same(emailsOf(await page('q=LOVELACE')), ['ada@lovelace.example'], 'q matches a word of the address, any case');
  t.same(emailsOf(await page('q=ada%20love')), ['ada@lovelace.example'], 'every word; the last may begin a word');
  t.same(emailsOf(await page('q=ada%40lovelace.example')), ['ada@lovelace.example'], 'the whole address');
  t.same(emailsOf(await page('q=love%20ada')), [], 'only the last word may be a beginning');
  t.same(emailsOf(await page('q=ovelace')), [], 'the middle of a word is not a match');
  t.same(emailsOf(await page('q=grace%20100%25')), ['p7@bulk.example'], 'punctuation separates words');
  t.equal((await page('q=%40%20%25')).json().data.length, 50, 'a q without letters or digits filters nothing');
  t.equal((await page('q=bulk&source=auto&limit=200')).json().data.length, 100, 'q and source are ANDed');
  t.equal((await page(`q=${'x'.repeat(200)}`)).statusCode, 200);
  t.same(errorOf(await page(`q=${'x'.repeat(201)}`)), { status: 422, code: 'invalid_parameter', param: 'q' });
  t.same(errorOf(await page('sort=name')), { status: 422, code: 'unknown_parameter', param: 'sort' });
});

t.test('the OpenAPI document describes the contacts and audiences paths', async (t) => {
  const res = await h.request(null, 'GET', '/openapi.json');
  t.equal(res.statusCode, 200);
  const paths = res.json().paths;
  t.ok(paths['/contacts']?.get && paths['/contacts']?.post);
  t.ok(paths['/contacts/{email}']?.get && paths['/contacts/{email}']?.patch && paths['/contacts/{email}']?.delete);
  t.ok(paths['/audiences']?.get && paths['/audiences']?.post && paths['/audiences/growth']?.get);
  t.ok(paths['/audiences/{id}']?.get && paths['/audiences/{id}']?.patch && paths['/audiences/{id}']?.delete);
  t.ok(paths['/audiences/{id}/contacts/{email}']?.put && paths['/audiences/{id}/contacts/{email}']?.delete);
  const errors = await h.request(null, 'GET', '/docs/errors');
  for (const code of ['contact_exists', 'contact_not_found', 'audience_not_found', 'builtin_audience'])
    t.match(errors.body, `id="${code}"`, code);
});
