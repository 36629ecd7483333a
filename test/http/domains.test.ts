import t from 'tap';
import { addDomain, errorOf, keyWith, startDomainsApp, statuses } from '../support/domains.ts';

/**
 * The domain routes through HTTP on one service (names differ per test: a name is one domain
 * across the service). DNS answers, verification and what a check changes: domains-dns.test.ts.
 */
const UNKNOWN_ID = '00000000-0000-4000-8000-000000000000';
const app = await startDomainsApp(t);

t.test('add, read, list: the shape, the name normalised, records unchecked until DNS is asked', async (t) => {
  const { h, dns } = app;
  const ws = await h.workspace();
  const created = await h.request(ws.apiKey, 'POST', '/domains', { domain: '  First.COM. ' });
  t.equal(created.statusCode, 201);
  const d = created.json();
  t.match(d.id, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  t.match(d, {
    object: 'domain',
    domain: 'first.com',
    receiving: { verified: false, verifiedAt: null, catchAll: false, lastCheckedAt: null, error: null },
    sending: { status: 'pending', canSend: false, checkedAt: null, error: null },
    tracking: { status: 'not_configured', host: null, record: null, error: null },
    storage: { status: 'not_configured', host: null, record: null, error: null },
    logo: null,
    dmarcPolicy: null,
    senderName: null,
    addresses: [],
    dmarc: null,
  });
  t.same(statuses(d), ['receiving null', 'spf null', 'dkim null', 'dmarc null', 'return_path null']);
  const dkim = d.records.find((r: { purpose: string }) => r.purpose === 'dkim');
  t.match(dkim, { type: 'TXT', name: /^wms\d{6}\._domainkey\.first\.com$/, priority: null });
  const publicKey = /p=([A-Za-z0-9+/=]+)$/.exec(dkim.value)![1]!;
  t.equal(Buffer.from(publicKey, 'base64').length, 294, 'a 2048-bit RSA SubjectPublicKeyInfo');
  t.match(d.records[0], { type: 'MX', name: 'first.com', value: 'mx.mail.test', priority: 10 });

  // The first read checks DNS (never checked): nothing is published, so every record is missing.
  const read = await h.request(ws.apiKey, 'GET', `/domains/${d.id}`);
  t.equal(read.statusCode, 200);
  t.same(statuses(read.json()), [
    'receiving missing',
    'spf missing',
    'dkim missing',
    'dmarc missing',
    'return_path missing',
  ]);
  t.match(read.json(), { receiving: { error: /No MX record/ }, sending: { status: 'pending', canSend: false } });
  t.ok(read.json().receiving.lastCheckedAt);
  const asked = dns.queries.length;
  t.ok(asked >= 5);
  const again = await h.request(ws.apiKey, 'GET', `/domains/${d.id}`);
  t.equal(dns.queries.length, asked, 'read again within 20 s: no new lookups');
  t.equal(again.json().receiving.lastCheckedAt, read.json().receiving.lastCheckedAt);

  const { addresses: _a, records: _r, dmarc: _d, ...row } = again.json();
  t.same((await h.request(ws.apiKey, 'GET', '/domains')).json(), {
    object: 'list',
    data: [row],
    hasMore: false,
    nextCursor: null,
  });
  t.equal((await h.request(ws.apiKey, 'POST', '/domains', { domain: 'bücher.de' })).json().domain, 'xn--bcher-kva.de');
});

t.test('errors: 422 names, 409 domain_in_use here and elsewhere, a race has one winner, delete frees', async (t) => {
  const { h } = app;
  const ws = await h.workspace();
  const other = await h.workspace();
  for (const bad of ['co.uk', 'github.io', '192.0.2.1', '[2001:db8::1]', 'localhost', 'x.local', 'exa_mple.com', '']) {
    t.same(
      errorOf(await h.request(ws.apiKey, 'POST', '/domains', { domain: bad })),
      [422, 'invalid_parameter', 'domain'],
      bad,
    );
  }
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/domains', {})), [422, 'invalid_parameter', 'domain']);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/domains', { domain: 'a.com', x: 1 })), [
    422,
    'unknown_parameter',
    'x',
  ]);
  // 226 characters at most, so that `<selector>._domainkey.<domain>` fits DNS's 253.
  const long = (n: number) => `${'a'.repeat(63)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(n)}.com`;
  t.equal(long(30).length, 226);
  t.equal((await h.request(ws.apiKey, 'POST', '/domains', { domain: long(30) })).statusCode, 201, 'the longest name');
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/domains', { domain: long(31) })),
    [422, 'invalid_parameter', 'domain'],
    'one past',
  );

  const d = await addDomain(h, ws.apiKey, 'taken.com');
  const here = await h.request(ws.apiKey, 'POST', '/domains', { domain: 'TAKEN.com' });
  t.same(errorOf(here), [409, 'domain_in_use', 'domain']);
  t.match(here.json().error.message, /this workspace already/);
  const elsewhere = await h.request(other.apiKey, 'POST', '/domains', { domain: 'taken.com' });
  t.same(errorOf(elsewhere), [409, 'domain_in_use', 'domain']);
  t.match(elsewhere.json().error.message, /another workspace/);

  const racers = await Promise.all(
    [ws, other, ws, other].map((w) => h.request(w.apiKey, 'POST', '/domains', { domain: 'race.example.net' })),
  );
  t.same(racers.map((r) => r.statusCode).sort(), [201, 409, 409, 409]);
  const lists = await Promise.all(
    [ws, other].map(async (w) => (await h.request(w.apiKey, 'GET', '/domains')).json().data),
  );
  t.equal(
    lists.flat().filter((r: { domain: string }) => r.domain === 'race.example.net').length,
    1,
    'one domain of that name',
  );

  const deleted = await h.request(ws.apiKey, 'DELETE', `/domains/${d.id}`);
  t.same(deleted.json(), { object: 'domain', id: d.id, deleted: true });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/domains/${d.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/domains/${d.id}`)), [404, 'resource_not_found', 'id']);
  const moved = await h.request(other.apiKey, 'POST', '/domains', { domain: 'taken.com' });
  t.equal(moved.statusCode, 201, 'the name is free for any workspace');
  t.not(moved.json().id, d.id);
});

t.test('foreign, unknown and malformed ids are 404 on every route; scopes; test keys', async (t) => {
  const { h } = app;
  const ws = await h.workspace();
  const other = await h.workspace();
  const theirs = await addDomain(h, other.apiKey, 'theirs.com');
  for (const id of [theirs.id, UNKNOWN_ID, 'theirs.com', UNKNOWN_ID.toUpperCase(), 'x']) {
    for (const [method, path, body] of [
      ['GET', `/domains/${id}`, undefined],
      ['PATCH', `/domains/${id}`, { catchAll: true }],
      ['DELETE', `/domains/${id}`, undefined],
      ['POST', `/domains/${id}/verify`, undefined],
      ['POST', `/domains/${id}/dkim/rotate`, undefined],
    ] as const) {
      t.same(
        errorOf(await h.request(ws.apiKey, method, path, body)),
        [404, 'resource_not_found', 'id'],
        `${method} ${path}`,
      );
    }
  }
  t.equal((await h.request(other.apiKey, 'GET', `/domains/${theirs.id}`)).statusCode, 200, 'still theirs');

  const reader = await keyWith(h, ws.apiKey, { scopes: ['domains:read'] });
  t.equal((await h.request(reader, 'GET', '/domains')).statusCode, 200);
  t.same(errorOf(await h.request(reader, 'POST', '/domains', { domain: 'a.com' })), [403, 'insufficient_scope', null]);
  const none = await keyWith(h, ws.apiKey, { scopes: ['templates:read'] });
  t.same(errorOf(await h.request(none, 'GET', '/domains')), [403, 'insufficient_scope', null]);

  const mine = await addDomain(h, ws.apiKey, 'mine.com');
  const test = await keyWith(h, ws.apiKey, { scopes: ['domains:read', 'domains:write'], mode: 'test' });
  t.equal((await h.request(test, 'GET', `/domains/${mine.id}`)).statusCode, 200, 'test keys read shared configuration');
  t.same(errorOf(await h.request(test, 'POST', '/domains', { domain: 't.com' })), [
    403,
    'beyond_caller_authority',
    null,
  ]);
  t.same(errorOf(await h.request(test, 'PATCH', `/domains/${mine.id}`, { catchAll: true })), [
    403,
    'beyond_caller_authority',
    null,
  ]);
  t.equal(
    (await h.request(test, 'POST', `/domains/${mine.id}/verify`)).statusCode,
    200,
    'looking at DNS changes nothing',
  );

  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  t.match(doc.paths['/domains/{id}'].delete.description, /step_up_required/, 'delete needs step-up for OAuth tokens');
  t.notMatch(doc.paths['/domains/{id}'].patch.description, /step_up_required/);
});

t.test('narrowed keys see every domain and change only the domains their lists hold', async (t) => {
  const { h } = app;
  const ws = await h.workspace();
  const a = await addDomain(h, ws.apiKey, 'a.com');
  const b = await addDomain(h, ws.apiKey, 'b.com');
  const narrowed = await keyWith(h, ws.apiKey, {
    scopes: ['domains:read', 'domains:write'],
    domainAllowlist: ['a.com', 'c.com'],
  });
  const byAddress = await keyWith(h, ws.apiKey, {
    scopes: ['domains:read', 'domains:write'],
    addressAllowlist: ['someone@a.com'],
  });
  for (const key of [narrowed, byAddress]) {
    t.same(
      (await h.request(key, 'GET', '/domains')).json().data.map((r: { domain: string }) => r.domain),
      ['a.com', 'b.com'],
    );
    t.equal((await h.request(key, 'GET', `/domains/${b.id}`)).statusCode, 200);
    for (const [method, path, body] of [
      ['PATCH', `/domains/${b.id}`, { catchAll: true }],
      ['DELETE', `/domains/${b.id}`, undefined],
      ['POST', `/domains/${b.id}/verify`, undefined],
      ['POST', `/domains/${b.id}/dkim/rotate`, undefined],
      ['POST', '/domains', { domain: 'd.com' }],
    ] as const) {
      t.same(
        errorOf(await h.request(key, method, path, body)),
        [422, 'capability_unsupported', 'addressAllowlist'],
        `${method} ${path}`,
      );
    }
  }
  t.equal((await h.request(narrowed, 'PATCH', `/domains/${a.id}`, { catchAll: true })).json().receiving.catchAll, true);
  t.equal((await h.request(narrowed, 'POST', '/domains', { domain: 'c.com' })).statusCode, 201);
  t.same(errorOf(await h.request(byAddress, 'PATCH', `/domains/${a.id}`, { catchAll: false })), [
    422,
    'capability_unsupported',
    'addressAllowlist',
  ]);
});

t.test('paging: alphabetical by name, rows added between pages, limits at the edge', async (t) => {
  const { h } = app;
  const ws = await h.workspace();
  for (const name of ['delta.com', 'alpha.com', 'charlie.com', 'a-z.com', 'echo.com'])
    await addDomain(h, ws.apiKey, name);
  const page1 = (await h.request(ws.apiKey, 'GET', '/domains?limit=2')).json();
  t.same(
    page1.data.map((r: { domain: string }) => r.domain),
    ['a-z.com', 'alpha.com'],
    'byte order: a hyphen before letters',
  );
  t.equal(page1.hasMore, true);
  await addDomain(h, ws.apiKey, 'bravo.com');
  await addDomain(h, ws.apiKey, 'aardvark.com');
  const page2 = (await h.request(ws.apiKey, 'GET', `/domains?limit=2&cursor=${page1.nextCursor}`)).json();
  t.same(
    page2.data.map((r: { domain: string }) => r.domain),
    ['bravo.com', 'charlie.com'],
    'one added after the cursor shows',
  );
  const page3 = (await h.request(ws.apiKey, 'GET', `/domains?limit=2&cursor=${page2.nextCursor}`)).json();
  t.same(page3, { ...page3, hasMore: false, nextCursor: null });
  t.same(
    page3.data.map((r: { domain: string }) => r.domain),
    ['delta.com', 'echo.com'],
  );
  t.equal((await h.request(ws.apiKey, 'GET', '/domains?limit=100')).json().data.length, 7);
  t.equal((await h.request(ws.apiKey, 'GET', '/domains?limit=1')).json().data.length, 1);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/domains?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/domains?limit=0')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/domains?cursor=nope')), [400, 'invalid_cursor', 'cursor']);
  const other = await h.workspace();
  t.same(
    errorOf(await h.request(other.apiKey, 'GET', `/domains?cursor=${page1.nextCursor}`)),
    [400, 'invalid_cursor', 'cursor'],
    "another workspace's cursor",
  );
});

t.test('update: settings, hosts with their own verification, *_host_in_use', async (t) => {
  const { h, dns } = app;
  const ws = await h.workspace();
  const other = await h.workspace();
  const d = await addDomain(h, ws.apiKey, 'upd.com');
  const patch = (id: string, body: object, key = ws.apiKey) => h.request(key, 'PATCH', `/domains/${id}`, body);

  const updated = await patch(d.id, {
    catchAll: true,
    dmarcPolicy: 'quarantine',
    senderName: '  Acme  ',
    logo: 'https://cdn.example.com/logo.png',
  });
  t.equal(updated.statusCode, 200);
  t.match(updated.json(), {
    receiving: { catchAll: true },
    dmarcPolicy: 'quarantine',
    senderName: 'Acme',
    logo: 'https://cdn.example.com/logo.png',
  });
  t.equal(
    updated.json().records.find((r: { purpose: string }) => r.purpose === 'dmarc').value,
    'v=DMARC1; p=quarantine; rua=mailto:postmaster@upd.com',
  );
  t.match((await patch(d.id, { senderName: null, logo: null, dmarcPolicy: null })).json(), {
    senderName: null,
    logo: null,
    dmarcPolicy: null,
    receiving: { catchAll: true },
  });
  t.equal((await patch(d.id, { senderName: 'x'.repeat(200) })).json().senderName, 'x'.repeat(200), '200 characters');
  for (const [body, param] of [
    [{ logo: 'http://cdn.example.com/logo.png' }, 'logo'],
    [{ senderName: '' }, 'senderName'],
    [{ senderName: 'x'.repeat(201) }, 'senderName'],
    [{ dmarcPolicy: 'strict' }, 'dmarcPolicy'],
    [{ catchAll: 'yes' }, 'catchAll'],
    [{ tracking: { host: 'links.other.com' } }, 'tracking.host'],
    [{ tracking: { host: 'upd.com' } }, 'tracking.host'],
    [{ storage: { host: 'bounces.upd.com' } }, 'storage.host'],
    [{ tracking: { host: 'links.upd.com', x: 1 } }, 'tracking.x'],
  ] as const) {
    const res = await patch(d.id, body);
    t.equal(res.statusCode, 422, JSON.stringify(body));
    t.equal(res.json().error.param, param);
  }
  t.equal(errorOf(await patch(d.id, { domain: 'other.com' }))[1], 'unknown_parameter', 'the name cannot change');

  // The catch-all's time zone: UTC until set, an IANA name, kept when other settings change.
  t.equal((await h.request(ws.apiKey, 'GET', `/domains/${d.id}`)).json().receiving.catchAllTimeZone, 'UTC');
  t.match((await patch(d.id, { catchAllTimeZone: 'Asia/Tokyo' })).json().receiving, {
    catchAll: true,
    catchAllTimeZone: 'Asia/Tokyo',
  });
  t.equal((await patch(d.id, { catchAll: true, senderName: 'Acme' })).json().receiving.catchAllTimeZone, 'Asia/Tokyo');
  for (const zone of ['Mars/Olympus', '+09:00', 'Asia/Tokyo '])
    t.same(
      errorOf(await patch(d.id, { catchAllTimeZone: zone })),
      [422, 'invalid_parameter', 'catchAllTimeZone'],
      zone,
    );
  t.same(
    errorOf(await patch(d.id, { catchAllTimeZone: 'Europe/Berlin' }, other.apiKey)),
    [404, 'resource_not_found', 'id'],
    "another workspace's domain",
  );
  t.equal((await h.request(ws.apiKey, 'GET', `/domains/${d.id}`)).json().receiving.catchAllTimeZone, 'Asia/Tokyo');

  const hosted = (
    await patch(d.id, { tracking: { host: 'Links.Upd.com' }, storage: { host: 'files.upd.com' } })
  ).json();
  t.match(hosted.tracking, {
    status: 'pending',
    host: 'links.upd.com',
    record: { type: 'CNAME', name: 'links.upd.com', value: 'track.mail.test', purpose: 'tracking', status: null },
    error: null,
  });
  t.match(hosted.storage, { status: 'pending', host: 'files.upd.com', record: { value: 'files.mail.test' } });
  t.same(
    hosted.records.map((r: { purpose: string }) => r.purpose),
    ['receiving', 'spf', 'dkim', 'dmarc', 'return_path', 'tracking', 'storage'],
  );

  dns.set('links.upd.com', { CNAME: 'track.mail.test' });
  dns.set('files.upd.com', { CNAME: 'somewhere.else.test' });
  const checked = (await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`)).json();
  t.match(checked.tracking, { status: 'active', error: null, record: { status: 'found' } });
  t.match(checked.storage, { status: 'failed', error: /somewhere.else.test/, record: { status: 'missing' } });

  // Hosts are names across the service: another domain's host, an added domain, one's own other host.
  const mine2 = await addDomain(h, ws.apiKey, 'sub.upd.com');
  const theirs = await addDomain(h, other.apiKey, 'upd.org');
  t.same(errorOf(await patch(mine2.id, { tracking: { host: 'links.sub.upd.com' } })), [200, undefined, undefined]);
  t.same(errorOf(await patch(d.id, { tracking: { host: 'links.sub.upd.com' } })), [
    409,
    'tracking_host_in_use',
    'tracking.host',
  ]);
  t.same(
    errorOf(await patch(d.id, { storage: { host: 'links.upd.com' } })),
    [409, 'storage_host_in_use', 'storage.host'],
    'its own tracking host',
  );
  t.same(
    errorOf(await patch(d.id, { tracking: { host: 'sub.upd.com' } })),
    [409, 'tracking_host_in_use', 'tracking.host'],
    'an added domain',
  );
  t.same(
    errorOf(await h.request(other.apiKey, 'POST', '/domains', { domain: 'links.upd.com' })),
    [409, 'domain_in_use', 'domain'],
    'a host in use',
  );
  t.same(errorOf(await patch(theirs.id, { tracking: { host: 'links.upd.org' } }, other.apiKey)), [
    200,
    undefined,
    undefined,
  ]);
  const refused = await patch(d.id, { catchAll: false, tracking: { host: 'links.sub.upd.com' } });
  t.equal(refused.statusCode, 409);
  t.equal(
    (await h.request(ws.apiKey, 'GET', `/domains/${d.id}`)).json().receiving.catchAll,
    true,
    'a refused PATCH changes nothing',
  );

  // A host given up is free again: the tracking host moves, the old one is taken by the storage host.
  t.equal((await patch(d.id, { tracking: { host: 'go.upd.com' } })).json().tracking.status, 'pending');
  t.equal((await patch(d.id, { storage: { host: 'links.upd.com' } })).json().storage.host, 'links.upd.com');
  t.match((await patch(d.id, { tracking: { host: null } })).json().tracking, {
    status: 'not_configured',
    host: null,
    record: null,
  });
  t.same(errorOf(await patch(mine2.id, { tracking: { host: 'go.sub.upd.com' } })), [200, undefined, undefined]);
  await h.request(ws.apiKey, 'DELETE', `/domains/${mine2.id}`);
  t.same(
    errorOf(await patch(d.id, { tracking: { host: 'links.sub.upd.com' } })),
    [200, undefined, undefined],
    "a deleted domain's hosts are free",
  );
});
