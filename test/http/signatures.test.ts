import t from 'tap';
import { SIGNATURES_MAX } from '../../domain/signatures/decide.ts';
import type { TestApp } from '../support/app.ts';
import { addDomain, errorOf, keyWith, publish, startDomainsApp } from '../support/domains.ts';

type Workspace = Awaited<ReturnType<TestApp['workspace']>>;

/** A workspace with example.com verified, catchAll on, and addresses a@ and b@ on it. */
async function start(t: Parameters<typeof startDomainsApp>[0]) {
  const { h, dns } = await startDomainsApp(t);
  const ws = await h.workspace();
  const d = await addDomain(h, ws.apiKey, 'example.com');
  publish(dns, d.records);
  const verified = (await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`)).json();
  if (!verified.receiving.verified) throw new Error(`not verified: ${JSON.stringify(verified)}`);
  await h.request(ws.apiKey, 'PATCH', `/domains/${d.id}`, { catchAll: true });
  const address = async (w: Workspace, a: string) => {
    const res = await h.request(w.apiKey, 'POST', '/addresses', { address: a });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json();
  };
  const a = await address(ws, 'a@example.com');
  const b = await address(ws, 'b@example.com');
  const sign = async (key: string, body: object) => {
    const res = await h.request(key, 'POST', '/signatures', body);
    if (res.statusCode !== 201) throw new Error(`signature not created: ${res.statusCode} ${res.body}`);
    return res.json();
  };
  const list = async (key: string, query = '') =>
    (await h.request(key, 'GET', `/signatures${query}`)).json().data as {
      id: string;
      address: string;
      name: string;
      isDefault: boolean;
      isReplyDefault: boolean;
    }[];
  return { h, dns, ws, d, a, b, address, sign, list };
}

t.test('signatures', async (t) => {
  const { h, ws, d, address, sign, list } = await start(t);

  t.test(
    'create: sanitised, trimmed, the first takes both defaults; read, list, update, defaults, delete',
    async (t) => {
      const res = await h.request(ws.apiKey, 'POST', '/signatures', {
        address: 'A@Example.com',
        name: '  Work ',
        html: '<p onclick="x()">Jane <script>alert(1)</script><b>Doe</b> <a href="javascript:x">x</a><img src="http://x.test/a.png"></p>',
      });
      t.equal(res.statusCode, 201);
      const work = res.json();
      t.match(work, {
        object: 'signature',
        address: 'a@example.com',
        name: 'Work',
        html: '<p>Jane <b>Doe</b> <a>x</a><img /></p>',
        isDefault: true,
        isReplyDefault: true,
      });
      t.match(work.id, /^sig_[0-9a-f]{24}$/);
      t.same((await h.request(ws.apiKey, 'GET', `/signatures/${work.id}`)).json(), work);

      const short = await sign(ws.apiKey, { address: 'a@example.com', name: 'Short', html: 'J.' });
      t.match(short, { isDefault: false, isReplyDefault: false }, 'a later one takes no place unasked');
      const replies = await sign(ws.apiKey, {
        address: 'a@example.com',
        name: 'Replies',
        html: '<i>J</i>',
        isReplyDefault: true,
      });
      t.match(replies, { isDefault: false, isReplyDefault: true });
      const flags = async () =>
        (await list(ws.apiKey, '?address=a@example.com')).map((s) => [s.name, s.isDefault, s.isReplyDefault]);
      t.same(
        await flags(),
        [
          ['Work', true, false],
          ['Short', false, false],
          ['Replies', false, true],
        ],
        'oldest first; the reply default moved',
      );
      const noDefault = await sign(ws.apiKey, { address: 'b@example.com', name: 'B', html: 'b', isDefault: false });
      t.match(noDefault, { isDefault: false, isReplyDefault: true }, 'the first, sent false for new mail');

      const patched = await h.request(ws.apiKey, 'PATCH', `/signatures/${short.id}`, {
        name: 'Brief',
        html: '<p>Jane</p>',
        isDefault: true,
      });
      t.match(patched.json(), { name: 'Brief', html: '<p>Jane</p>', isDefault: true });
      t.same(await flags(), [
        ['Work', false, false],
        ['Brief', true, false],
        ['Replies', false, true],
      ]);
      t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/signatures/${short.id}`, { name: 'work' })), [
        409,
        'signature_name_taken',
        'name',
      ]);
      t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/signatures/${short.id}`, { address: 'b@example.com' })), [
        422,
        'unknown_parameter',
        'address',
      ]);

      const defaults = await h.request(ws.apiKey, 'PUT', '/signatures/defaults', {
        address: 'a@example.com',
        defaultId: work.id,
        replyDefaultId: null,
      });
      t.same(defaults.json(), {
        object: 'signature_defaults',
        address: 'a@example.com',
        defaultId: work.id,
        replyDefaultId: null,
      });
      t.same(await flags(), [
        ['Work', true, false],
        ['Brief', false, false],
        ['Replies', false, false],
      ]);
      t.same(
        errorOf(
          await h.request(ws.apiKey, 'PUT', '/signatures/defaults', {
            address: 'a@example.com',
            replyDefaultId: noDefault.id,
          }),
        ),
        [404, 'resource_not_found', 'replyDefaultId'],
        "another address's signature",
      );

      t.same((await h.request(ws.apiKey, 'DELETE', `/signatures/${work.id}`)).json(), {
        object: 'signature',
        id: work.id,
        deleted: true,
      });
      t.same(
        await flags(),
        [
          ['Brief', false, false],
          ['Replies', false, false],
        ],
        'a deleted default leaves no default',
      );
      t.same(errorOf(await h.request(ws.apiKey, 'GET', `/signatures/${work.id}`)), [404, 'resource_not_found', 'id']);
      t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/signatures/${work.id}`)), [
        404,
        'resource_not_found',
        'id',
      ]);
      for (const s of await list(ws.apiKey)) await h.request(ws.apiKey, 'DELETE', `/signatures/${s.id}`);
    },
  );

  t.test('html: some text or an image, 150,000 characters before and after sanitising; names', async (t) => {
    const post = (html: string, name = `n${Math.random()}`) =>
      h.request(ws.apiKey, 'POST', '/signatures', { address: 'b@example.com', name, html });
    for (const html of ['<script>alert(1)</script>', '<p>&nbsp; </p>', '<img src="http://x.test/a.png">', '  ']) {
      t.same(errorOf(await post(html)), [422, 'invalid_parameter', 'html'], html);
    }
    t.equal((await post('<img src="https://x.test/logo.png">')).statusCode, 201, 'an image alone');
    const edge = `<p>${'a'.repeat(150_000 - 7)}</p>`;
    t.equal(edge.length, 150_000);
    t.equal((await post(edge)).statusCode, 201, '150,000 characters');
    t.same(errorOf(await post(`<p>${'a'.repeat(150_000 - 6)}</p>`)), [422, 'invalid_parameter', 'html'], '150,001');
    const grows = await post(`<p>${'&'.repeat(40_000)}</p>`);
    t.same(errorOf(grows), [422, 'invalid_parameter', 'html'], 'escaping made it longer than 150,000');
    t.match(grows.json().error.message, /once sanitised/);
    t.same(errorOf(await post('<p>x</p>', '   ')), [422, 'invalid_parameter', 'name']);
    t.equal((await post('<p>x</p>', 'n'.repeat(80))).statusCode, 201, 'an 80-character name');
    t.same(errorOf(await post('<p>x</p>', 'n'.repeat(81))), [422, 'invalid_parameter', 'name']);
    t.same(errorOf(await post('<p>x</p>', 'N'.repeat(80))), [409, 'signature_name_taken', 'name'], 'ignoring case');
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/signatures', { address: 'b@example.com', name: 'x' })), [
      422,
      'invalid_parameter',
      'html',
    ]);
    for (const s of await list(ws.apiKey)) await h.request(ws.apiKey, 'DELETE', `/signatures/${s.id}`);
  });

  t.test(
    'addresses: unknown ones, catch-alls only on a verified domain with catchAll on, @domain refused',
    async (t) => {
      const post = (address: string) => h.request(ws.apiKey, 'POST', '/signatures', { address, name: 'S', html: 's' });
      t.same(errorOf(await post('nobody@example.com')), [404, 'address_not_found', 'address']);
      t.same(errorOf(await post('x@elsewhere.org')), [404, 'address_not_found', 'address']);
      t.same(errorOf(await post('@example.com')), [422, 'invalid_parameter', 'address']);
      t.same(errorOf(await post('not an address')), [422, 'invalid_parameter', 'address']);
      const catchAll = await post('*@Example.com');
      t.equal(catchAll.statusCode, 201);
      t.match(catchAll.json(), { address: '*@example.com', isDefault: true });
      const unverified = await addDomain(h, ws.apiKey, 'example.org');
      await h.request(ws.apiKey, 'PATCH', `/domains/${unverified.id}`, { catchAll: true });
      t.same(errorOf(await post('*@example.org')), [404, 'address_not_found', 'address'], 'not verified');
      await h.request(ws.apiKey, 'PATCH', `/domains/${d.id}`, { catchAll: false });
      t.same(errorOf(await post('*@example.com')), [404, 'address_not_found', 'address'], 'catchAll off');
      t.same((await list(ws.apiKey, '?address=*@example.com')).length, 1, 'what it had stays');
      await h.request(ws.apiKey, 'PATCH', `/domains/${d.id}`, { catchAll: true });
      t.same(errorOf(await h.request(ws.apiKey, 'GET', '/signatures?address=@example.com')), [
        422,
        'invalid_parameter',
        'address',
      ]);
      t.same(errorOf(await h.request(ws.apiKey, 'GET', '/signatures?address=nonsense')), [
        422,
        'invalid_parameter',
        'address',
      ]);
      for (const s of await list(ws.apiKey)) await h.request(ws.apiKey, 'DELETE', `/signatures/${s.id}`);
    },
  );

  t.test('fifty per address: racing creates for the last free places, one past; racing names', async (t) => {
    for (let i = 0; i < SIGNATURES_MAX - 2; i++)
      await sign(ws.apiKey, { address: 'a@example.com', name: `s${i}`, html: 'x' });
    const last = await Promise.all(
      ['last1', 'last2', 'last3', 'last4'].map((name) =>
        h.request(ws.apiKey, 'POST', '/signatures', { address: 'a@example.com', name, html: 'x' }),
      ),
    );
    t.same(
      last.map((r) => r.statusCode).sort(),
      [201, 201, 422, 422],
      'four creates for two free places: two made, two refused',
    );
    t.ok(last.filter((r) => r.statusCode === 422).every((r) => r.json().error.code === 'signature_limit_reached'));
    t.same(
      errorOf(await h.request(ws.apiKey, 'POST', '/signatures', { address: 'a@example.com', name: 'more', html: 'x' })),
      [422, 'signature_limit_reached', null],
    );
    const made = await list(ws.apiKey, '?address=a@example.com&limit=100');
    t.equal(made.length, SIGNATURES_MAX);
    t.same(
      made
        .filter((s) => s.name.startsWith('last'))
        .map((s) => s.name)
        .sort(),
      last
        .filter((r) => r.statusCode === 201)
        .map((r) => r.json().name)
        .sort(),
      'the listed winners are the ones answered 201',
    );
    const racing = await Promise.all(
      ['Team', 'TEAM', 'team', 'tEam', 'Team', 'teaM'].map((name) =>
        h.request(ws.apiKey, 'POST', '/signatures', { address: 'b@example.com', name, html: 'x' }),
      ),
    );
    t.same(racing.map((r) => r.statusCode).sort(), [201, 409, 409, 409, 409, 409]);
    t.ok(racing.filter((r) => r.statusCode === 409).every((r) => r.json().error.code === 'signature_name_taken'));
    t.equal((await list(ws.apiKey, '?address=b@example.com')).length, 1);
    for (const s of await list(ws.apiKey, '?limit=100')) await h.request(ws.apiKey, 'DELETE', `/signatures/${s.id}`);
  });

  t.test('paging by address then oldest, with rows added between pages; foreign ids', async (t) => {
    await address(ws, 'c@example.com');
    await sign(ws.apiKey, { address: 'b@example.com', name: 'b1', html: 'x' });
    await sign(ws.apiKey, { address: 'a@example.com', name: 'a1', html: 'x' });
    await sign(ws.apiKey, { address: 'b@example.com', name: 'b2', html: 'x' });
    const page1 = (await h.request(ws.apiKey, 'GET', '/signatures?limit=2')).json();
    t.same(
      page1.data.map((s: { name: string }) => s.name),
      ['a1', 'b1'],
    );
    await sign(ws.apiKey, { address: 'a@example.com', name: 'a2', html: 'x' });
    await sign(ws.apiKey, { address: 'c@example.com', name: 'c1', html: 'x' });
    const page2 = (await h.request(ws.apiKey, 'GET', `/signatures?limit=2&cursor=${page1.nextCursor}`)).json();
    t.same(
      page2.data.map((s: { name: string }) => s.name),
      ['b2', 'c1'],
      'a row sorting before the cursor is not shown; one after it is',
    );
    t.equal(page2.hasMore, false);
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/addresses?cursor=${page1.nextCursor}`)), [
      400,
      'invalid_cursor',
      'cursor',
    ]);

    const stranger = await h.workspace();
    const theirs = page1.data[0].id;
    for (const [method, url, body] of [
      ['GET', `/signatures/${theirs}`],
      ['PATCH', `/signatures/${theirs}`, { name: 'x' }],
      ['DELETE', `/signatures/${theirs}`],
      ['POST', `/signatures/${theirs}/copy`, { addresses: ['a@example.com'] }],
    ] as const) {
      t.same(errorOf(await h.request(stranger.apiKey, method, url, body)), [404, 'resource_not_found', 'id'], method);
    }
    t.same(
      errorOf(
        await h.request(stranger.apiKey, 'POST', '/signatures', { address: 'a@example.com', name: 'x', html: 'x' }),
      ),
      [404, 'address_not_found', 'address'],
      "another workspace's address",
    );
    t.same(await list(stranger.apiKey), []);
    t.same(errorOf(await h.request(ws.apiKey, 'GET', '/signatures/sig_nope')), [404, 'resource_not_found', 'id']);
  });

  t.test('copy to other addresses: all targets checked before any copy', async (t) => {
    for (const s of await list(ws.apiKey, '?limit=100')) await h.request(ws.apiKey, 'DELETE', `/signatures/${s.id}`);
    const source = await sign(ws.apiKey, { address: 'a@example.com', name: 'Team', html: '<p>The team</p>' });
    await sign(ws.apiKey, { address: 'c@example.com', name: 'team', html: 'x' });
    const copy = (addresses: string[]) => h.request(ws.apiKey, 'POST', `/signatures/${source.id}/copy`, { addresses });
    t.same(errorOf(await copy(['b@example.com', 'c@example.com'])), [409, 'signature_name_taken', 'addresses.1']);
    t.same(errorOf(await copy(['b@example.com', 'zz@example.com'])), [404, 'address_not_found', 'addresses.1']);
    t.same(errorOf(await copy([])), [422, 'invalid_parameter', 'addresses']);
    t.same(await list(ws.apiKey, '?address=b@example.com'), [], 'nothing was copied');
    const copied = await copy(['b@example.com', '*@example.com', 'B@example.com']);
    t.equal(copied.statusCode, 201);
    t.match(copied.json().data, [
      { address: 'b@example.com', name: 'Team', html: '<p>The team</p>', isDefault: true, isReplyDefault: true },
      { address: '*@example.com', name: 'Team' },
    ]);
    t.equal(copied.json().data.length, 2, 'a repeated target is one');
    t.same(errorOf(await copy(['b@example.com'])), [409, 'signature_name_taken', 'addresses.0'], 'copied already');
  });

  t.test('narrowed keys: only their addresses, a catch-all only with the whole domain', async (t) => {
    const scopes = ['settings:read', 'settings:write'];
    const onA = await keyWith(h, ws.apiKey, { scopes, addressAllowlist: ['a@example.com'] });
    const whole = await keyWith(h, ws.apiKey, { scopes, domainAllowlist: ['example.com'] });
    t.same([...new Set((await list(onA, '?limit=100')).map((s) => s.address))], ['a@example.com'], 'only its address');
    t.same(
      [...new Set((await list(whole, '?limit=100')).map((s) => s.address))],
      ['*@example.com', 'a@example.com', 'b@example.com', 'c@example.com'],
    );
    const onB = (await list(ws.apiKey, '?address=b@example.com'))[0]!;
    const onCatchAll = (await list(ws.apiKey, '?address=*@example.com'))[0]!;
    t.same(errorOf(await h.request(onA, 'GET', `/signatures/${onB.id}`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(onA, 'GET', `/signatures/${onCatchAll.id}`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(onA, 'PATCH', `/signatures/${onB.id}`, { name: 'x' })), [
      404,
      'resource_not_found',
      'id',
    ]);
    t.same(await list(onA, '?address=b@example.com'), []);
    const post = (key: string, address: string) =>
      h.request(key, 'POST', '/signatures', { address, name: `n${Math.random()}`, html: 'x' });
    t.same(errorOf(await post(onA, 'b@example.com')), [422, 'capability_unsupported', 'address']);
    t.same(errorOf(await post(onA, '*@example.com')), [422, 'capability_unsupported', 'address']);
    t.same(errorOf(await post(onA, 'nobody@example.com')), [422, 'capability_unsupported', 'address']);
    t.equal((await post(onA, 'a@example.com')).statusCode, 201);
    t.equal((await post(whole, '*@example.com')).statusCode, 201);
    const own = (await list(onA))[0]!;
    t.same(errorOf(await h.request(onA, 'POST', `/signatures/${own.id}/copy`, { addresses: ['b@example.com'] })), [
      422,
      'capability_unsupported',
      'addresses.0',
    ]);

    const testKey = await keyWith(h, ws.apiKey, { scopes, mode: 'test' });
    t.equal((await h.request(testKey, 'GET', '/signatures')).statusCode, 200);
    t.same(errorOf(await post(testKey, 'a@example.com')), [403, 'beyond_caller_authority', null]);
    const reader = await keyWith(h, ws.apiKey, { scopes: ['settings:read'] });
    t.same(errorOf(await post(reader, 'a@example.com')), [403, 'insufficient_scope', null]);
  });

  t.test('the legacy single signature; an address deleted takes its signatures', async (t) => {
    const legacy = (address: string, html: string) =>
      h.request(ws.apiKey, 'PUT', '/signatures/legacy', { address, html });
    await address(ws, 'old@example.com');
    const first = await legacy('old@example.com', '<p>Old</p>');
    t.match(first.json(), { name: 'Signature', html: '<p>Old</p>', isDefault: true, isReplyDefault: true });
    const again = await legacy('old@example.com', '<p>Older</p>');
    t.match(again.json(), { id: first.json().id, html: '<p>Older</p>' }, 'the same signature');
    t.equal((await list(ws.apiKey, '?address=old@example.com')).length, 1);
    t.same(errorOf(await legacy('nobody@example.com', 'x')), [404, 'address_not_found', 'address']);

    const b = (await h.request(ws.apiKey, 'GET', '/addresses'))
      .json()
      .data.find((x: { address: string }) => x.address === 'b@example.com');
    t.ok((await list(ws.apiKey, '?address=b@example.com')).length > 0);
    await h.request(ws.apiKey, 'DELETE', `/addresses/${b.id}`);
    t.same(await list(ws.apiKey, '?address=b@example.com'), [], 'its signatures went with it');
    await address(ws, 'b@example.com');
    t.same(await list(ws.apiKey, '?address=b@example.com'), [], 'and do not come back with the address');
    t.equal(
      (await h.request(ws.apiKey, 'POST', '/signatures', { address: 'b@example.com', name: 'Team', html: 'x' }))
        .statusCode,
      201,
      'a name the old address had is free',
    );
  });
});
