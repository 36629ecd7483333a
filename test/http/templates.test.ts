import t from 'tap';
import { parseDocument, DomUtils } from 'htmlparser2';
import { startTestApp, type TestApp } from '../support/app.ts';

const text = (s: string, extra: object = {}) => ({ kind: 'Text', text: s, ...extra });
const nameProp = { name: 'name', type: 'string', default: 'there' };
const blocksBody = (extra: object = {}) => ({
  subject: 'Hello {{name}}',
  document: { body: [{ kind: 'Heading', text: 'Hi {{name}}', level: 2 }, text('Welcome aboard.')] },
  props: [nameProp],
  ...extra,
});

async function keyWith(h: TestApp, ownerKey: string, body: object): Promise<string> {
  const res = await h.request(ownerKey, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

async function create(h: TestApp, key: string, body: object) {
  const res = await h.request(key, 'POST', '/templates', body);
  if (res.statusCode !== 201) throw new Error(`template not created: ${res.statusCode} ${res.body}`);
  return res.json();
}

/**
 * One app for the file: each test makes workspaces of its own, and a template is only ever seen
 * through its workspace, so the tests cannot see each other's.
 */
const h = await startTestApp(t);

const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

t.test('create a draft: slug from the name, version 1, published fields absent; read by id and by slug', async (t) => {
  const ws = await h.workspace();
  const res = await h.request(ws.apiKey, 'POST', '/templates', {
    name: '  Welcome Email ',
    description: 'First mail',
    ...blocksBody(),
  });
  t.equal(res.statusCode, 201);
  const tpl = res.json();
  t.match(tpl, {
    object: 'template',
    slug: 'welcome-email',
    name: 'Welcome Email',
    description: 'First mail',
    status: 'draft',
    publishedVersion: null,
    latestVersion: 1,
  });
  t.match(tpl.id, /^tpl_[0-9a-f]{24}$/);
  for (const field of ['subject', 'engine', 'slots', 'props'])
    t.notOk(field in tpl, `${field} absent while nothing is published`);
  t.match(tpl.latest, {
    version: 1,
    state: 'draft',
    engine: 'blocks',
    subject: 'Hello {{name}}',
    html: null,
    publishedAt: null,
  });
  t.equal(tpl.latest.document.body.length, 2);
  t.match(res.headers.etag, /^"\d+\.\d+"$/);

  const byId = await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}`);
  const bySlug = await h.request(ws.apiKey, 'GET', '/templates/welcome-email');
  t.same(byId.json(), tpl, 'read-your-writes by id');
  t.same(bySlug.json(), tpl, 'and by slug');
  t.equal(byId.headers.etag, res.headers.etag);
});

t.test('create with publish: active, the published fields describe version 1', async (t) => {
  const ws = await h.workspace();
  const tpl = await create(h, ws.apiKey, { name: 'Receipt', publish: true, ...blocksBody() });
  t.match(tpl, {
    status: 'active',
    publishedVersion: 1,
    latestVersion: 1,
    subject: 'Hello {{name}}',
    engine: 'blocks',
    slots: [],
  });
  t.match(tpl.props, [{ name: 'name', type: 'string', default: 'there', required: false }]);
  t.match(tpl.latest, { state: 'published' });
  t.ok(Date.parse(tpl.latest.publishedAt));
});

t.test('names unique ignoring case, slugs unique; a derived slug takes a suffix', async (t) => {
  const ws = await h.workspace();
  await create(h, ws.apiKey, { name: 'Welcome' });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', { name: 'WELCOME' })), [
    409,
    'template_name_taken',
    'name',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', { name: 'Other', slug: 'welcome' })), [
    409,
    'template_slug_taken',
    'slug',
  ]);
  t.equal((await create(h, ws.apiKey, { name: 'Welcome!' })).slug, 'welcome-2');
  t.equal((await create(h, ws.apiKey, { name: 'Chosen', slug: 'my-slug' })).slug, 'my-slug');
  const other = await h.workspace();
  t.equal((await create(h, other.apiKey, { name: 'Welcome' })).slug, 'welcome', 'another workspace has its own names');
});

t.test('concurrent creates of one name: exactly one 201, the rest 409, one template listed', async (t) => {
  const ws = await h.workspace();
  const results = await Promise.all(
    Array.from({ length: 8 }, () => h.request(ws.apiKey, 'POST', '/templates', { name: 'Race' })),
  );
  const codes = results.map((r) => r.statusCode).sort();
  t.same(codes, [201, 409, 409, 409, 409, 409, 409, 409]);
  for (const r of results.filter((r) => r.statusCode === 409)) t.equal(r.json().error.code, 'template_name_taken');
  const list = await h.request(ws.apiKey, 'GET', '/templates');
  t.equal(list.json().data.length, 1);
});

t.test('content validation: invalid_template with the path down to the block', async (t) => {
  const ws = await h.workspace();
  const post = (body: object) => h.request(ws.apiKey, 'POST', '/templates', { name: `T${Math.random()}`, ...body });
  const nested = {
    body: [text('a'), text('b'), { kind: 'Section', children: [text('c', { style: { position: 'absolute' } })] }],
  };
  t.same(errorOf(await post({ document: nested })), [
    422,
    'invalid_template',
    'document.body.2.children.0.style.position',
  ]);
  const kebab = { body: [text('a', { style: { 'background-color': '#fff', 'z-index': 3 } })] };
  t.same(errorOf(await post({ document: kebab })), [422, 'invalid_template', 'document.body.0.style.z-index']);
  t.same(errorOf(await post({ document: { body: [{ kind: 'Text', text: 'x', colour: 'red' }] } })), [
    422,
    'invalid_template',
    'document.body.0.colour',
  ]);
  t.same(errorOf(await post({ document: { body: [{ kind: 'Marquee' }] } })), [
    422,
    'invalid_template',
    'document.body.0.kind',
  ]);
  t.equal(
    (await post({ document: { body: Array.from({ length: 500 }, () => ({ kind: 'Hr' })) } })).statusCode,
    201,
    '500 blocks',
  );
  t.same(errorOf(await post({ document: { body: Array.from({ length: 501 }, () => ({ kind: 'Hr' })) } })), [
    422,
    'invalid_template',
    'document.body.500',
  ]);
  const deep = (n: number): object => (n === 1 ? { kind: 'Hr' } : { kind: 'Container', children: [deep(n - 1)] });
  t.equal((await post({ document: { body: [deep(8)] } })).statusCode, 201, '8 deep');
  const nine = await post({ document: { body: [deep(9)] } });
  t.same(errorOf(nine), [422, 'invalid_template', `document.body.0${'.children.0'.repeat(8)}`]);
  t.equal((await post({ document: { body: [], preview: 'p'.repeat(256) } })).statusCode, 201);
  t.same(errorOf(await post({ document: { body: [], preview: 'p'.repeat(257) } })), [
    422,
    'invalid_template',
    'document.preview',
  ]);
  t.equal((await post({ subject: 's'.repeat(998) })).statusCode, 201);
  t.same(errorOf(await post({ subject: 's'.repeat(999) })), [422, 'invalid_template', 'subject']);
  t.same(errorOf(await post({ subject: 'two\r\nlines' })), [422, 'invalid_template', 'subject']);
  t.same(errorOf(await post({ subject: 'Hi {{who}}' })), [422, 'invalid_template', 'subject']);
  t.equal((await post({ html: 'x'.repeat(1_000_000) })).statusCode, 201, 'html of 1,000,000 characters');
  t.same(errorOf(await post({ html: 'x'.repeat(1_000_001) })), [422, 'invalid_template', 'html']);
  t.same(errorOf(await post({ engine: 'blocks', html: '<p/>' })), [422, 'invalid_template', 'html']);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', { name: 'n'.repeat(101) })), [
    422,
    'invalid_parameter',
    'name',
  ]);
  t.equal((await h.request(ws.apiKey, 'POST', '/templates', { name: 'n'.repeat(100) })).statusCode, 201);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', { name: '   ' })), [
    422,
    'invalid_parameter',
    'name',
  ]);
  t.same(errorOf(await post({ description: 'd'.repeat(501) })), [422, 'invalid_parameter', 'description']);
  t.same(errorOf(await post({ slug: 'Bad_Slug' })), [422, 'invalid_parameter', 'slug']);
  t.same(errorOf(await post({ slug: 's'.repeat(65) })), [422, 'invalid_parameter', 'slug']);
  t.same(errorOf(await post({ colour: 'red' })), [422, 'unknown_parameter', 'colour']);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', {})), [422, 'invalid_parameter', 'name']);
});

t.test('200 templates per workspace, archived ones counted; only delete frees a place', async (t) => {
  const ws = await h.workspace();
  const first = (await create(h, ws.apiKey, { name: 'T0' })).id;
  // 25 at a time: the count holds under concurrency, and the waits for read models overlap.
  for (let i = 1; i < 200; i += 25)
    await Promise.all(
      Array.from({ length: Math.min(25, 200 - i) }, (_, j) => create(h, ws.apiKey, { name: `T${i + j}` })),
    );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', { name: 'One more' })), [
    422,
    'workspace_limit_reached',
    null,
  ]);
  t.equal((await h.request(ws.apiKey, 'POST', `/templates/${first}/archive`)).json().status, 'archived');
  t.equal(
    (await h.request(ws.apiKey, 'POST', '/templates', { name: 'One more' })).statusCode,
    422,
    'archiving frees nothing',
  );
  t.equal((await h.request(ws.apiKey, 'DELETE', `/templates/${first}`)).statusCode, 200);
  t.equal((await h.request(ws.apiKey, 'POST', '/templates', { name: 'One more' })).statusCode, 201, 'deleting does');
});

t.test(
  'PATCH: rename keeps the slug, omitted fields stay, lists replace wholesale, null clears the description',
  async (t) => {
    const ws = await h.workspace();
    const tpl = await create(h, ws.apiKey, {
      name: 'Original',
      description: 'desc',
      subject: 'Hi {{name}} from {{team}}',
      document: { body: [text('Hello {{name}}')] },
      props: [nameProp],
      slots: [{ name: 'team', default: 'us' }],
    });
    const res = await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { name: 'Renamed', description: null });
    t.equal(res.statusCode, 200);
    t.match(res.json(), { name: 'Renamed', slug: 'original', description: null, latestVersion: 1 });
    t.equal(res.json().latest.subject, 'Hi {{name}} from {{team}}', 'omitted content stays');

    const replaced = await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, {
      subject: 'Hi',
      slots: [],
      document: { body: [text('Plain')] },
      props: [],
    });
    t.equal(replaced.statusCode, 200);
    t.same(replaced.json().latest.slots, []);
    t.same(replaced.json().latest.props, []);
    t.same(
      replaced.json().latest.document.body.map((b: { text: string }) => b.text),
      ['Plain'],
    );
    t.equal(replaced.json().latestVersion, 1, 'a draft head is edited in place');

    t.same(
      errorOf(await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { slots: [], subject: 'Hi {{team}}' })),
      [422, 'invalid_template', 'subject'],
    );
    await create(h, ws.apiKey, { name: 'Taken' });
    t.same(
      errorOf(await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { name: 'TAKEN', subject: 'Changed' })),
      [409, 'template_name_taken', 'name'],
    );
    t.equal(
      (await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}`)).json().latest.subject,
      'Hi',
      'a refused rename changes nothing else',
    );
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { slug: 'new' })), [
      422,
      'unknown_parameter',
      'slug',
    ]);
  },
);

t.test('versions: an edit of a published template mints a draft; sends keep the published one', async (t) => {
  const ws = await h.workspace();
  const tpl = await create(h, ws.apiKey, { name: 'Versioned', publish: true, ...blocksBody() });
  const edited = (await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { subject: 'Changed {{name}}' })).json();
  t.match(edited, { latestVersion: 2, publishedVersion: 1, status: 'active', subject: 'Hello {{name}}' });
  t.match(edited.latest, { version: 2, state: 'draft', subject: 'Changed {{name}}' });

  const sent = (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, { props: { name: 'Ann' } })).json();
  t.match(sent, { object: 'rendered_template', version: 1, subject: 'Hello Ann' });

  const published = (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/publish`, {})).json();
  t.match(published, { publishedVersion: 2, latestVersion: 2, subject: 'Changed {{name}}' });
  t.equal(
    (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, { props: { name: 'Ann' } })).json().subject,
    'Changed Ann',
  );

  const rolledBack = (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/publish`, { version: 1 })).json();
  t.match(rolledBack, { publishedVersion: 1, latestVersion: 2 });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/publish`, { version: 9 })), [
    422,
    'template_version_not_found',
    'version',
  ]);

  const list = (await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions`)).json();
  t.same(
    list.data.map((v: { version: number; live: boolean; state: string }) => [v.version, v.live, v.state]),
    [
      [2, false, 'published'],
      [1, true, 'published'],
    ],
  );
  t.notOk('document' in list.data[0], 'list rows leave out the body');
  const one = await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions/1`);
  t.match(one.json(), {
    object: 'template_version',
    templateId: tpl.id,
    version: 1,
    subject: 'Hello {{name}}',
    live: true,
  });
  t.equal(one.json().document.body.length, 2);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions/7`)), [
    422,
    'template_version_not_found',
    'version',
  ]);

  const restored = (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/versions/2/restore`)).json();
  t.match(restored, { latestVersion: 3, publishedVersion: 1 });
  t.match(restored.latest, { version: 3, state: 'draft', subject: 'Changed {{name}}' });

  t.same(
    errorOf(await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}/versions/1`)),
    [422, 'template_version_not_deletable', 'version'],
    'live',
  );
  t.same(
    errorOf(await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}/versions/3`)),
    [422, 'template_version_not_deletable', 'version'],
    'being edited',
  );
  const gone = await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}/versions/2`);
  t.same(gone.json(), { object: 'template_version', templateId: tpl.id, version: 2, deleted: true });
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}/versions/2`)), [
    422,
    'template_version_not_found',
    'version',
  ]);
  t.same(
    (await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions`))
      .json()
      .data.map((v: { version: number }) => v.version),
    [3, 1],
  );

  const only = await create(h, ws.apiKey, { name: 'Only one' });
  t.same(
    errorOf(await h.request(ws.apiKey, 'DELETE', `/templates/${only.id}/versions/1`)),
    [422, 'template_version_not_deletable', 'version'],
    'the only one',
  );
});

t.test('versions list pages with a cursor', async (t) => {
  const ws = await h.workspace();
  const tpl = await create(h, ws.apiKey, { name: 'Many', publish: true, ...blocksBody() });
  for (let i = 0; i < 4; i++)
    await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { subject: `S${i}`, publish: true });
  const p1 = (await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions?limit=2`)).json();
  t.same([p1.data.map((v: { version: number }) => v.version), p1.hasMore], [[5, 4], true]);
  await h.request(ws.apiKey, 'PATCH', `/templates/${tpl.id}`, { subject: 'S-new' });
  const p2 = (
    await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions?limit=2&cursor=${p1.nextCursor}`)
  ).json();
  t.same(
    p2.data.map((v: { version: number }) => v.version),
    [3, 2],
    'a version added meanwhile does not shift the walk',
  );
  const p3 = (
    await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}/versions?limit=2&cursor=${p2.nextCursor}`)
  ).json();
  t.same([p3.data.map((v: { version: number }) => v.version), p3.hasMore, p3.nextCursor], [[1], false, null]);
  const other = await create(h, ws.apiKey, { name: 'Other' });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/templates/${other.id}/versions?cursor=${p1.nextCursor}`)), [
    400,
    'invalid_cursor',
    'cursor',
  ]);
});

t.test('If-Match: a template changed since the read is 409 version_conflict and nothing changes', async (t) => {
  const ws = await h.workspace();
  const created = await h.request(ws.apiKey, 'POST', '/templates', { name: 'Guarded', ...blocksBody() });
  const tag = created.headers.etag as string;
  const id = created.json().id;
  const first = await h.request(ws.apiKey, 'PATCH', `/templates/${id}`, { subject: 'First' }, { 'if-match': tag });
  t.equal(first.statusCode, 200);
  t.not(first.headers.etag, tag, 'the ETag moves with each change');
  const stale = await h.request(ws.apiKey, 'PATCH', `/templates/${id}`, { subject: 'Second' }, { 'if-match': tag });
  t.same(errorOf(stale), [409, 'version_conflict', null]);
  t.equal((await h.request(ws.apiKey, 'GET', `/templates/${id}`)).json().latest.subject, 'First');

  const renamed = await h.request(
    ws.apiKey,
    'PATCH',
    `/templates/${id}`,
    { name: 'Guarded 2' },
    { 'if-match': first.headers.etag as string },
  );
  t.equal(renamed.statusCode, 200);
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/templates/${id}/publish`, {}, { 'if-match': first.headers.etag as string }),
    ),
    [409, 'version_conflict', null],
    'a rename moves the ETag too',
  );
  for (const [method, path] of [
    ['POST', 'archive'],
    ['POST', 'versions/1/restore'],
    ['DELETE', ''],
  ] as const) {
    const res = await h.request(ws.apiKey, method, `/templates/${id}${path ? `/${path}` : ''}`, undefined, {
      'if-match': tag,
    });
    t.same(errorOf(res), [409, 'version_conflict', null], `${method} ${path}`);
  }
  t.same(
    errorOf(await h.request(ws.apiKey, 'PATCH', `/templates/${id}`, { subject: 'x' }, { 'if-match': '"garbage"' })),
    [409, 'version_conflict', null],
  );
  t.equal(
    (await h.request(ws.apiKey, 'PATCH', `/templates/${id}`, { subject: 'Any' }, { 'if-match': '*' })).statusCode,
    200,
  );
  const current = (await h.request(ws.apiKey, 'GET', `/templates/${id}`)).headers.etag as string;
  t.equal(
    (await h.request(ws.apiKey, 'PATCH', `/templates/${id}`, { subject: 'Current' }, { 'if-match': current }))
      .statusCode,
    200,
  );
});

t.test('status: archive and unarchive; sends refuse archived and unpublished templates', async (t) => {
  const ws = await h.workspace();
  const draft = await create(h, ws.apiKey, { name: 'Draft', ...blocksBody() });
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${draft.id}/render`, {})), [
    422,
    'template_not_published',
    'template',
  ]);
  t.equal(
    (await h.request(ws.apiKey, 'POST', `/templates/${draft.id}/render`, { version: 1 })).statusCode,
    200,
    'a draft renders as a preview',
  );

  const live = await create(h, ws.apiKey, { name: 'Live', publish: true, ...blocksBody() });
  t.equal((await h.request(ws.apiKey, 'POST', `/templates/${live.id}/archive`)).json().status, 'archived');
  t.equal(
    (await h.request(ws.apiKey, 'POST', `/templates/${live.id}/archive`)).json().status,
    'archived',
    'twice changes nothing',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${live.id}/render`, {})), [
    422,
    'template_archived',
    'template',
  ]);
  t.equal((await h.request(ws.apiKey, 'POST', `/templates/${live.id}/unarchive`)).json().status, 'active');
  t.equal((await h.request(ws.apiKey, 'POST', `/templates/${live.id}/render`, {})).statusCode, 200);
  await h.request(ws.apiKey, 'POST', `/templates/${draft.id}/archive`);
  t.equal(
    (await h.request(ws.apiKey, 'POST', `/templates/${draft.id}/unarchive`)).json().status,
    'draft',
    'never published: back to draft',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/templates/${live.id}/archive`, { force: true })), [
    422,
    'unknown_parameter',
    'force',
  ]);
});

t.test('render: props filled and escaped, unknown props and slots refused, HTML and text parts', async (t) => {
  const ws = await h.workspace();
  const tpl = await create(h, ws.apiKey, {
    name: 'Render me',
    publish: true,
    subject: '{{greeting}}, {{name}}',
    slots: [{ name: 'greeting', default: 'Hello' }],
    props: [nameProp, { name: 'link', type: 'url', required: true }],
    document: {
      preview: 'Preview for {{name}}',
      body: [
        { kind: 'Heading', text: 'Hi {{name}}', level: 1 },
        { kind: 'Button', text: 'Open', href: '{{link}}' },
      ],
    },
  });
  const res = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, {
    props: { name: '<b>Ann</b>', link: 'https://example.com/a?b=1&c=2' },
    slots: { greeting: 'Hey' },
  });
  t.equal(res.statusCode, 200);
  const out = res.json();
  t.equal(out.subject, 'Hey, <b>Ann</b>');
  const dom = parseDocument(out.html);
  const h1 = DomUtils.findOne((e) => e.name === 'h1', dom.children, true)!;
  t.equal(DomUtils.textContent(h1), 'Hi <b>Ann</b>', 'the value is text, not markup');
  t.equal(DomUtils.findAll((e) => e.name === 'b', dom.children).length, 0);
  const link = DomUtils.findOne((e) => e.name === 'a' && DomUtils.textContent(e).includes('Open'), dom.children, true)!;
  t.equal(link.attribs.href, 'https://example.com/a?b=1&c=2');
  t.match(out.text, /Hi <b>Ann<\/b>/);

  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, {
        props: { link: 'https://x.example', colour: 'red' },
      }),
    ),
    [422, 'unknown_template_prop', 'props.colour'],
  );
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, {
        props: { link: 'https://x.example' },
        slots: { nope: 'x' },
      }),
    ),
    [422, 'unknown_template_slot', 'slots.nope'],
  );
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, { props: {} })),
    [422, 'invalid_parameter', 'props.link'],
    'a required prop',
  );
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, { props: { link: 'javascript:alert(1)' } }),
    ),
    [422, 'invalid_parameter', 'props.link'],
  );
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, {
        version: 5,
        props: { link: 'https://x.example' },
      }),
    ),
    [422, 'template_version_not_found', 'version'],
  );
});

t.test('html engine: stored as submitted, sanitised when published and rendered', async (t) => {
  const ws = await h.workspace();
  const html =
    '<table><tr><td style="color: #333">Hi {{name}}</td></tr></table><script>alert(1)</script><a href="javascript:x()" onclick="y()">bad</a>';
  const tpl = await create(h, ws.apiKey, { name: 'Raw', subject: 'Hi', html, props: [nameProp], publish: true });
  t.match(tpl, { engine: 'html', status: 'active' });
  t.equal(tpl.latest.html, html, 'latest keeps what was submitted');
  t.equal(tpl.latest.document, null);
  const out = (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/render`, { props: { name: 'Bo' } })).json();
  const dom = parseDocument(out.html);
  t.equal(DomUtils.findAll((e) => e.name === 'script', dom.children).length, 0);
  const a = DomUtils.findOne((e) => e.name === 'a', dom.children, true);
  t.notOk(a?.attribs.onclick);
  t.notMatch(a?.attribs.href ?? '', /javascript/);
  t.equal(DomUtils.textContent(DomUtils.findOne((e) => e.name === 'td', dom.children, true)!), 'Hi Bo');
});

t.test('starters: listed; create from one, own fields win; unknown starter 404', async (t) => {
  const ws = await h.workspace();
  const starters = (await h.request(ws.apiKey, 'GET', '/templates/starters')).json();
  t.ok(starters.data.length >= 3);
  for (const s of starters.data) {
    const made = await h.request(ws.apiKey, 'POST', '/templates', {
      name: `From ${s.slug}`,
      starter: s.slug,
      publish: true,
    });
    t.equal(made.statusCode, 201, `starter ${s.slug} creates and publishes`);
    t.equal(made.json().engine, s.engine);
  }
  const own = await create(h, ws.apiKey, { name: 'Mine', starter: 'welcome', subject: 'My own subject' });
  t.equal(own.latest.subject, 'My own subject');
  t.equal(own.description, starters.data.find((s: { slug: string }) => s.slug === 'welcome').description);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/templates', { name: 'X', starter: 'nope' })), [
    404,
    'resource_not_found',
    'starter',
  ]);
});

t.test('duplicate and delete', async (t) => {
  const ws = await h.workspace();
  const tpl = await create(h, ws.apiKey, { name: 'Source', description: 'd', publish: true, ...blocksBody() });
  const dup = await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/duplicate`);
  t.equal(dup.statusCode, 201);
  t.match(dup.json(), {
    name: 'Source (copy)',
    slug: 'source-copy',
    status: 'draft',
    latestVersion: 1,
    description: 'd',
  });
  t.same(dup.json().latest.document, tpl.latest.document);
  t.equal(
    (await h.request(ws.apiKey, 'POST', `/templates/${tpl.id}/duplicate`, { name: 'Named copy' })).json().name,
    'Named copy',
  );

  const del = await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}`);
  t.same(del.json(), { object: 'template', id: tpl.id, deleted: true });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/templates/${tpl.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/templates/${tpl.id}`)), [404, 'resource_not_found', 'id']);
  t.equal((await create(h, ws.apiKey, { name: 'Source' })).slug, 'source', 'name and slug are free again');
});

t.test("another workspace's template, unknown ids and slugs are 404 everywhere", async (t) => {
  const ws = await h.workspace();
  const other = await h.workspace();
  const tpl = await create(h, other.apiKey, { name: 'Theirs', publish: true, ...blocksBody() });
  for (const id of [tpl.id, 'theirs', 'tpl_000000000000000000000000', 'Not_A_Slug']) {
    for (const [method, path, body] of [
      ['GET', '', undefined],
      ['PATCH', '', { subject: 'x' }],
      ['DELETE', '', undefined],
      ['POST', '/render', {}],
      ['POST', '/publish', {}],
      ['POST', '/archive', undefined],
      ['POST', '/duplicate', undefined],
      ['GET', '/versions', undefined],
      ['GET', '/versions/1', undefined],
      ['POST', '/versions/1/restore', undefined],
    ] as const) {
      t.same(
        errorOf(await h.request(ws.apiKey, method, `/templates/${id}${path}`, body)),
        [404, 'resource_not_found', 'id'],
        `${method} ${id}${path}`,
      );
    }
  }
  t.equal(
    (await h.request(other.apiKey, 'GET', `/templates/${tpl.id}`)).json().latest.subject,
    'Hello {{name}}',
    'theirs is untouched',
  );
});

t.test('scopes: reading needs templates:read, changing needs templates:write', async (t) => {
  const ws = await h.workspace();
  const tpl = await create(h, ws.apiKey, { name: 'Scoped', publish: true, ...blocksBody() });
  const reader = await keyWith(h, ws.apiKey, { scopes: ['templates:read'] });
  const none = await keyWith(h, ws.apiKey, { scopes: ['settings:read'] });
  t.equal((await h.request(reader, 'GET', '/templates')).statusCode, 200);
  t.equal((await h.request(reader, 'POST', `/templates/${tpl.id}/render`, {})).statusCode, 200);
  t.same(errorOf(await h.request(reader, 'POST', '/templates', { name: 'x' })), [403, 'insufficient_scope', null]);
  t.same(errorOf(await h.request(reader, 'PATCH', `/templates/${tpl.id}`, { subject: 'x' })), [
    403,
    'insufficient_scope',
    null,
  ]);
  t.same(errorOf(await h.request(none, 'GET', `/templates/${tpl.id}`)), [403, 'insufficient_scope', null]);
});

t.test('the OpenAPI document lists every template path we chose', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  for (const path of [
    '/templates',
    '/templates/starters',
    '/templates/{id}',
    '/templates/{id}/duplicate',
    '/templates/{id}/publish',
    '/templates/{id}/archive',
    '/templates/{id}/unarchive',
    '/templates/{id}/versions',
    '/templates/{id}/versions/{version}',
    '/templates/{id}/versions/{version}/restore',
    '/templates/{id}/render',
  ]) {
    t.ok(doc.paths[path], path);
  }
  t.ok(doc.paths['/templates'].post.requestBody, 'the create body is described');
});

t.test('concurrent renames under one If-Match: exactly one wins, the rest 409 version_conflict', async (t) => {
  const ws = await h.workspace();
  const created = await h.request(ws.apiKey, 'POST', '/templates', { name: 'Contended', ...blocksBody() });
  const id = created.json().id;
  const tag = created.headers.etag as string;
  const results = await Promise.all(
    Array.from({ length: 20 }, (_, i) =>
      h.request(ws.apiKey, 'PATCH', `/templates/${id}`, { name: `Renamed ${i}` }, { 'if-match': tag }),
    ),
  );
  const won = results.flatMap((r, i) => (r.statusCode === 200 ? [i] : []));
  t.equal(won.length, 1, 'one 200');
  for (const r of results.filter((r) => r.statusCode !== 200)) t.same(errorOf(r), [409, 'version_conflict', null]);
  const read = await h.request(ws.apiKey, 'GET', `/templates/${id}`);
  t.equal(read.json().name, `Renamed ${won[0]}`, 'the winner named it');
  t.equal(read.headers.etag, results[won[0]!]!.headers.etag, "and the winner's ETag is current");
  const same = await Promise.all(
    Array.from({ length: 5 }, () =>
      h.request(
        ws.apiKey,
        'PATCH',
        `/templates/${id}`,
        { name: 'One name' },
        { 'if-match': read.headers.etag as string },
      ),
    ),
  );
  t.same(same.map((r) => r.statusCode).sort(), [200, 409, 409, 409, 409], 'also when they all ask for the same name');
});
