import t from 'tap';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

async function create(h: TestApp, key: string, body: object) {
  const res = await h.request(key, 'POST', '/templates', body);
  if (res.statusCode !== 201) throw new Error(`template not created: ${res.statusCode} ${res.body}`);
  return res.json();
}
const names = (res: { json: () => any }) => res.json().data.map((r: { name: string }) => r.name);
const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];
const published = (subject: string) => ({ publish: true, subject, document: { body: [{ kind: 'Text', text: 'x' }] } });

/**
 * One app for the file: each test makes workspaces of its own, and every list is of one
 * workspace, so the tests cannot see each other's templates. The rebuild counts every row of the
 * read model, so it has an app of its own.
 */
const h = await startTestApp(t);

t.test('the six sorts, each with its own cursors', async (t) => {
  const ws = await h.workspace();
  for (const name of ['bravo', 'Alpha', 'delta', 'Charlie']) await create(h, ws.apiKey, { name });
  await h.request(ws.apiKey, 'PATCH', '/templates/bravo', { description: 'touched' });
  const sorted = async (sort: string) => names(await h.request(ws.apiKey, 'GET', `/templates?sort=${sort}`));
  t.same(
    await sorted('updated-newest'),
    ['bravo', 'Charlie', 'delta', 'Alpha'],
    'an edit moves a template to the front',
  );
  t.same(
    names(await h.request(ws.apiKey, 'GET', '/templates')),
    ['bravo', 'Charlie', 'delta', 'Alpha'],
    'the default sort',
  );
  t.same(await sorted('updated-oldest'), ['Alpha', 'delta', 'Charlie', 'bravo']);
  t.same(await sorted('created-newest'), ['Charlie', 'delta', 'Alpha', 'bravo']);
  t.same(await sorted('created-oldest'), ['bravo', 'Alpha', 'delta', 'Charlie']);
  t.same(await sorted('name'), ['Alpha', 'bravo', 'Charlie', 'delta'], 'names sort ignoring case');
  t.same(await sorted('name-reversed'), ['delta', 'Charlie', 'bravo', 'Alpha']);

  for (const sort of [
    'updated-newest',
    'updated-oldest',
    'created-newest',
    'created-oldest',
    'name',
    'name-reversed',
  ]) {
    const walked: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await h.request(
        ws.apiKey,
        'GET',
        `/templates?sort=${sort}&limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      walked.push(...names(res));
      cursor = res.json().nextCursor;
    } while (cursor);
    t.same(walked, await sorted(sort), `a walk under ${sort} sees each once`);
  }
  const page = (await h.request(ws.apiKey, 'GET', '/templates?sort=name&limit=1')).json();
  t.same(
    errorOf(await h.request(ws.apiKey, 'GET', `/templates?sort=created-newest&cursor=${page.nextCursor}`)),
    [400, 'invalid_cursor', 'cursor'],
    'a cursor of another sort',
  );
  t.same(
    errorOf(await h.request(ws.apiKey, 'GET', `/templates?cursor=${page.nextCursor}`)),
    [400, 'invalid_cursor', 'cursor'],
    'the default sort is another sort too',
  );
  const other = await h.workspace();
  t.same(
    errorOf(await h.request(other.apiKey, 'GET', `/templates?sort=name&cursor=${page.nextCursor}`)),
    [400, 'invalid_cursor', 'cursor'],
    'another workspace',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/templates?sort=size')), [422, 'invalid_parameter', 'sort']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/templates?cursor=${'x'.repeat(2049)}`)), [
    422,
    'invalid_parameter',
    'cursor',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/templates?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.equal((await h.request(ws.apiKey, 'GET', '/templates?limit=100')).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/templates?limit=0')), [422, 'invalid_parameter', 'limit']);
});

t.test('a walk survives templates added and deleted between pages', async (t) => {
  const ws = await h.workspace();
  const made = [];
  for (let i = 0; i < 6; i++) made.push(await create(h, ws.apiKey, { name: `T${i}` }));
  const p1 = (await h.request(ws.apiKey, 'GET', '/templates?sort=created-oldest&limit=2')).json();
  t.same(
    p1.data.map((r: { name: string }) => r.name),
    ['T0', 'T1'],
  );
  await create(h, ws.apiKey, { name: 'T6' });
  await h.request(ws.apiKey, 'DELETE', `/templates/${made[1].id}`);
  await h.request(ws.apiKey, 'DELETE', `/templates/${made[2].id}`);
  const p2 = (
    await h.request(ws.apiKey, 'GET', `/templates?sort=created-oldest&limit=2&cursor=${p1.nextCursor}`)
  ).json();
  t.same(
    p2.data.map((r: { name: string }) => r.name),
    ['T3', 'T4'],
  );
  const p3 = (
    await h.request(ws.apiKey, 'GET', `/templates?sort=created-oldest&limit=2&cursor=${p2.nextCursor}`)
  ).json();
  t.same([p3.data.map((r: { name: string }) => r.name), p3.hasMore], [['T5', 'T6'], false]);
});

t.test('status filter', async (t) => {
  const ws = await h.workspace();
  await create(h, ws.apiKey, { name: 'Draft' });
  await create(h, ws.apiKey, { name: 'Live', ...published('s') });
  const archived = await create(h, ws.apiKey, { name: 'Old', ...published('s') });
  await h.request(ws.apiKey, 'POST', `/templates/${archived.id}/archive`);
  for (const [status, expected] of [
    ['draft', ['Draft']],
    ['active', ['Live']],
    ['archived', ['Old']],
  ] as const) {
    t.same(names(await h.request(ws.apiKey, 'GET', `/templates?status=${status}`)), expected, status);
  }
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/templates?status=deleted')), [422, 'invalid_parameter', 'status']);
});

t.test(
  'search: every word over name, slug, description, published subject and id; literal % and _; close spellings',
  async (t) => {
    const ws = await h.workspace();
    const welcome = await create(h, ws.apiKey, {
      name: 'Welcome series',
      description: 'Sent after signup',
      ...published('Your account is ready'),
    });
    await create(h, ws.apiKey, { name: 'Password reset', slug: 'pw-reset' });
    await create(h, ws.apiKey, { name: 'Discount 100%', description: 'promo_code inside' });
    await create(h, ws.apiKey, { name: 'Discount 1000', description: 'promoXcode' });
    const drafty = await create(h, ws.apiKey, { name: 'Drafty', subject: 'secret subject' });
    const search = async (q: string) =>
      names(await h.request(ws.apiKey, 'GET', `/templates?sort=name&search=${encodeURIComponent(q)}`));

    t.same(await search('welcome'), ['Welcome series'], 'name, any case');
    t.same(await search('SERIES welc'), ['Welcome series'], 'every word, any order');
    t.same(await search('welcome reset'), [], 'every word must match');
    t.same(await search('pw-reset'), ['Password reset'], 'slug');
    t.same(await search('signup'), ['Welcome series'], 'description');
    t.same(await search('account ready'), ['Welcome series'], 'published subject');
    t.same(await search('secret'), [], 'a draft subject is not searched');
    t.same(await search(welcome.id), ['Welcome series'], 'id');
    t.same(await search('100%'), ['Discount 100%'], '% is literal');
    t.same(await search('promo_code'), ['Discount 100%'], '_ is literal');
    t.same(await search('pasword'), ['Password reset'], 'a close spelling when nothing matches exactly');
    t.same(await search('welcom sries'), ['Welcome series'], 'each word loosely');
    t.same(await search('zzzzqqq'), [], 'nothing close');
    t.equal(drafty.status, 'draft');
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/templates?search=${'a'.repeat(201)}`)), [
      422,
      'invalid_parameter',
      'search',
    ]);
    t.equal((await h.request(ws.apiKey, 'GET', `/templates?search=${'a'.repeat(200)}`)).statusCode, 200);
    const other = await h.workspace();
    t.same(
      names(await h.request(other.apiKey, 'GET', '/templates?search=welcome')),
      [],
      "another workspace's templates never show",
    );
  },
);

t.test('search: a typo finds what was meant when nothing matches as typed', async (t) => {
  const ws = await h.workspace();
  await create(h, ws.apiKey, { name: 'Order receipt' });
  await create(h, ws.apiKey, { name: 'Refund receipt' });
  await create(h, ws.apiKey, { name: 'Weekly news digest' });
  await create(h, ws.apiKey, { name: 'Shipping alert' });
  await create(h, ws.apiKey, { name: 'Account verification' });
  const search = async (q: string) =>
    names(await h.request(ws.apiKey, 'GET', `/templates?sort=name&search=${encodeURIComponent(q)}`));

  t.same(await search('recepit'), ['Order receipt', 'Refund receipt'], 'two letters swapped');
  t.same(await search('neews'), ['Weekly news digest'], 'a letter doubled');
  t.same(await search('recipt'), ['Order receipt', 'Refund receipt'], 'a letter missing');
  t.same(await search('aldert'), ['Shipping alert'], 'a letter extra');
  t.same(await search('reveipt'), ['Order receipt', 'Refund receipt'], 'a wrong letter');
  t.same(await search('weekly neews'), ['Weekly news digest'], 'a typo beside a word typed right');
  t.same(await search('refnud recepit'), ['Refund receipt'], 'every word must still match');
  t.same(await search('verifcaton'), ['Account verification'], 'two edits in a word of 8 letters or more');
  t.same(await search('recpiet'), [], 'two edits in a shorter word are too many');
  t.same(await search('nws'), [], 'a word under 4 letters must be typed right');

  const first = (await h.request(ws.apiKey, 'GET', '/templates?sort=name&limit=1&search=recepit')).json();
  t.same([names({ json: () => first }), first.hasMore], [['Order receipt'], true]);
  await create(h, ws.apiKey, { name: 'Another receipt' });
  const second = (
    await h.request(ws.apiKey, 'GET', `/templates?sort=name&limit=1&search=recepit&cursor=${first.nextCursor}`)
  ).json();
  t.same(
    [names({ json: () => second }), second.hasMore],
    [['Refund receipt'], false],
    'a walk goes on in the same mode, a template added before its cursor unseen',
  );
});

t.test('a rebuilt templates read model equals the live one', async (t) => {
  const h = await startTestApp(t);
  const ws = await h.workspace();
  const a = await create(h, ws.apiKey, { name: 'A', ...published('one') });
  await h.request(ws.apiKey, 'PATCH', `/templates/${a.id}`, { name: 'A2', subject: 'two', publish: true });
  await h.request(ws.apiKey, 'PATCH', `/templates/${a.id}`, { subject: 'three' });
  await h.request(ws.apiKey, 'DELETE', `/templates/${a.id}/versions/1`);
  const b = await create(h, ws.apiKey, { name: 'B' });
  await h.request(ws.apiKey, 'POST', `/templates/${b.id}/archive`);
  const c = await create(h, ws.apiKey, { name: 'C' });
  await h.request(ws.apiKey, 'DELETE', `/templates/${c.id}`);
  const { db, pool } = h.system.database;
  const projector = h.system.runner.projectors.find((p) => p.name === 'templates')!;
  const rows = async (schema: string) => ({
    templates: (await pool.query(`SELECT * FROM ${schema}.templates ORDER BY id`)).rows,
    versions: (await pool.query(`SELECT * FROM ${schema}.template_versions ORDER BY template_id, version`)).rows,
  });
  const live = await rows('public');
  t.equal(live.templates.length, 2);
  t.equal(live.versions.length, 3);
  await rebuildProjection(db, pool, h.system.store, h.system.runner, projector, {
    swap: false,
    schema: 'compare_templates',
  });
  t.same(await rows('compare_templates'), live);
});
