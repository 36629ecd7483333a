import t from 'tap';
import { errorOf } from '../support/domains.ts';
import { startSendingApp } from '../support/emails.ts';
import { walkPages } from '../support/paging.ts';
import { replyTemplate } from '../support/rules.ts';

/**
 * The rules API at its limits (spec Limits, "Rule" and "rules 100"), its paging, and the refusals
 * that name other things: each refusal is checked to have stored nothing.
 */
const { h, setUp, keyWith } = await startSendingApp(t);

type Ws = Awaited<ReturnType<typeof setUp>>['ws'];
interface Rule {
  id: string;
  name: string;
  position: number;
  description: string | null;
}

const fromOlga = { field: 'envelope_from', op: 'equals', value: 'olga@outside.test' };
const archive = { type: 'label', value: 'archive' };
const ruleBody = (name: string, extra: object = {}) => ({ name, conditions: [fromOlga], actions: [archive], ...extra });
const create = (ws: Ws, address: string, body: object, key = ws.apiKey) =>
  h.request(key, 'POST', `/rules?address=${encodeURIComponent(address)}`, body);
const created = async (ws: Ws, address: string, body: object): Promise<Rule> => {
  const res = await create(ws, address, body);
  if (res.statusCode !== 201) throw new Error(`rule not created: ${res.statusCode} ${res.body}`);
  return res.json();
};
const page = (ws: Ws, address: string, query = '') =>
  h.request(ws.apiKey, 'GET', `/rules?address=${encodeURIComponent(address)}${query}`);
/** Every rule of the mailbox in the order they run (a mailbox holds at most 100: one page). */
const stored = async (ws: Ws, address: string): Promise<Rule[]> => {
  const res = await page(ws, address, '&limit=100');
  if (res.statusCode !== 200 || res.json().hasMore) throw new Error(`not one page: ${res.body}`);
  return res.json().data;
};
const names = async (ws: Ws, address: string) => (await stored(ws, address)).map((r) => r.name).sort();

t.test('create: each field at its limit is stored, one past is refused naming it', async (t) => {
  const { ws } = await setUp('limits-create.example.com');
  const BOX = 'a@limits-create.example.com';
  const n = (i: number) => `c${i}`;
  const conditions = (count: number) =>
    Array.from({ length: count }, (_, i) => ({ ...fromOlga, value: `sender${i}@outside.test` }));
  const actions = (count: number) => Array.from({ length: count }, () => archive);
  const header = (name: string) => [{ field: 'header', header: name, op: 'equals', value: 'v' }];
  const reject = (value: string) => ({ conditions: [fromOlga], actions: [{ type: 'reject', value }] });
  const emoji = '\u{1F600}';

  const accepted: [string, object][] = [
    ['name of 100 characters', { name: 'n'.repeat(100) }],
    ['name of 100 code points (200 UTF-16 units)', { name: emoji.repeat(100) }],
    ['description of 500 characters', { name: n(1), description: 'd'.repeat(500) }],
    ['description of 500 code points', { name: n(2), description: emoji.repeat(500) }],
    ['1 condition', { name: n(3), conditions: conditions(1) }],
    ['20 conditions', { name: n(4), conditions: conditions(20) }],
    ['1 action', { name: n(5), actions: actions(1) }],
    ['10 actions', { name: n(6), actions: actions(10) }],
    ['condition value of 512 characters', { name: n(7), conditions: [{ ...fromOlga, value: 'v'.repeat(512) }] }],
    ['condition value of 512 code points', { name: n(8), conditions: [{ ...fromOlga, value: emoji.repeat(512) }] }],
    ['header name of 128 characters', { name: n(9), conditions: header('X'.repeat(128)) }],
    ['action value of 320 characters', { name: n(10), ...reject('r'.repeat(320)) }],
  ];
  const refused: [string, object, string][] = [
    ['name of 101 characters', { name: 'n'.repeat(101) }, 'name'],
    ['name of 101 code points', { name: emoji.repeat(101) }, 'name'],
    ['empty name', { name: '' }, 'name'],
    ['name of spaces only', { name: '   ' }, 'name'],
    ['description of 501 characters', { name: 'x1', description: 'd'.repeat(501) }, 'description'],
    ['no condition', { name: 'x2', conditions: [] }, 'conditions'],
    ['21 conditions', { name: 'x3', conditions: conditions(21) }, 'conditions'],
    ['no action', { name: 'x4', actions: [] }, 'actions'],
    ['11 actions', { name: 'x5', actions: actions(11) }, 'actions'],
    [
      'condition value of 513 characters',
      { name: 'x6', conditions: [{ ...fromOlga, value: 'v'.repeat(513) }] },
      'conditions.0.value',
    ],
    ['header name of 129 characters', { name: 'x7', conditions: header('X'.repeat(129)) }, 'conditions.0.header'],
    ['action value of 321 characters', { name: 'x8', ...reject('r'.repeat(321)) }, 'actions.0.value'],
  ];
  const answers = await Promise.all([
    ...accepted.map(([, extra]) => create(ws, BOX, ruleBody('', extra))),
    ...refused.map(([, extra]) => create(ws, BOX, ruleBody('', extra))),
  ]);
  for (const [i, [what]] of accepted.entries()) t.equal(answers[i]!.statusCode, 201, `${what}: ${answers[i]!.body}`);
  for (const [i, [what, , param]] of refused.entries())
    t.same(errorOf(answers[accepted.length + i]!), [422, 'invalid_parameter', param], what);
  t.same(
    errorOf(await create(ws, BOX, ruleBody('x9', { position: 0 }))),
    [422, 'unknown_parameter', 'position'],
    'no position on create',
  );

  const rules = await stored(ws, BOX);
  t.same(
    rules.map((r) => r.name).sort(),
    accepted.map(([, extra]) => (extra as { name: string }).name).sort(),
    'the accepted rules are stored, nothing of the refused ones',
  );
  t.same(
    rules.map((r) => r.position),
    rules.map((_, i) => i),
    'each appended at the end',
  );
  t.equal(rules.find((r) => r.name === n(2))?.description, emoji.repeat(500), 'stored whole');
});

t.test('update: position from 0 to 1,000,000, the other limits as on create; a refusal changes nothing', async (t) => {
  const { ws } = await setUp('limits-update.example.com');
  const BOX = 'a@limits-update.example.com';
  const [one, two] = await Promise.all([created(ws, BOX, ruleBody('One')), created(ws, BOX, ruleBody('Two'))]);
  const patch = (id: string, body: object) => h.request(ws.apiKey, 'PATCH', `/rules/${id}`, body);

  const top = await patch(one!.id, { position: 1_000_000 });
  t.equal(top.statusCode, 200, top.body);
  t.equal(top.json().position, 1_000_000);
  const bottom = await patch(two!.id, { position: 0 });
  t.equal(bottom.json().position, 0, bottom.body);

  const refusals: [object, string][] = [
    [{ position: -1 }, 'position'],
    [{ position: 1_000_001 }, 'position'],
    [{ position: 1.5 }, 'position'],
    [{ position: '3' }, 'position'],
    [{ name: 'n'.repeat(101) }, 'name'],
    [{ description: 'd'.repeat(501) }, 'description'],
    [{ conditions: [] }, 'conditions'],
    [{ actions: Array.from({ length: 11 }, () => archive) }, 'actions'],
    [{ conditions: [{ ...fromOlga, value: 'v'.repeat(513) }] }, 'conditions.0.value'],
  ];
  for (const [body, param] of refusals)
    t.same(errorOf(await patch(one!.id, body)), [422, 'invalid_parameter', param], JSON.stringify(body).slice(0, 60));
  t.match(
    await stored(ws, BOX),
    [
      { id: two!.id, name: 'Two', position: 0 },
      { id: one!.id, name: 'One', position: 1_000_000, description: null, conditions: [fromOlga] },
    ],
    'both rules as the accepted patches left them',
  );
  const appended = await created(ws, BOX, ruleBody('Three'));
  t.equal(appended.position, 1_000_000, 'appending past the last position stays at 1,000,000');
  t.same(
    (await stored(ws, BOX)).map((r) => r.name),
    ['Two', 'One', 'Three'],
    'ties run oldest first',
  );
});

t.test('100 rules a workspace: the 101st refused on any mailbox; reorder takes 1 to 100 ids', async (t) => {
  const { ws } = await setUp('limits-many.example.com');
  const [A, B] = ['a@limits-many.example.com', 'b@limits-many.example.com'];
  const made = await Promise.all(
    Array.from({ length: 100 }, (_, i) => created(ws, i < 90 ? A : B, ruleBody(`Rule ${i}`))),
  );
  t.equal(new Set(made.map((r) => r.id)).size, 100, '100 rules over two mailboxes');

  for (const address of [A, B])
    t.same(
      errorOf(await create(ws, address, ruleBody('One too many'))),
      [422, 'workspace_limit_reached', null],
      `the 101st on ${address}`,
    );
  const onB = made.filter((_, i) => i >= 90);
  t.same((await names(ws, B)).length, 10, 'nothing stored by the refusals');
  t.notOk((await stored(ws, A)).some((r) => r.name === 'One too many'));

  // Reorder's own bounds need one mailbox with 100 rules: B's ten give way to A's.
  await Promise.all(onB.map((r) => h.request(ws.apiKey, 'DELETE', `/rules/${r.id}`)));
  const more = await Promise.all(Array.from({ length: 10 }, (_, i) => created(ws, A, ruleBody(`More ${i}`))));
  const before = await stored(ws, A);
  t.equal(before.length, 100);
  t.same(
    errorOf(await create(ws, B, ruleBody('One too many'))),
    [422, 'workspace_limit_reached', null],
    'still 100 in the workspace',
  );

  const reorder = (ruleIds: string[]) =>
    h.request(ws.apiKey, 'POST', `/rules/reorder?address=${encodeURIComponent(A)}`, { ruleIds });
  const reversed = before.map((r) => r.id).reverse();
  t.same(errorOf(await reorder([])), [422, 'invalid_parameter', 'ruleIds'], 'no ids');
  t.same(errorOf(await reorder([...reversed, reversed[0]!])), [422, 'invalid_parameter', 'ruleIds'], '101 ids');
  t.same(errorOf(await reorder(reversed.slice(1))), [422, 'incomplete_order', 'ruleIds'], '99 of 100');
  t.same(
    errorOf(await reorder([...reversed.slice(1), reversed[1]!])),
    [422, 'incomplete_order', 'ruleIds'],
    '100 ids, one twice',
  );
  t.same(
    (await stored(ws, A)).map((r) => [r.id, r.position]),
    before.map((r) => [r.id, r.position]),
    'the refused reorders changed nothing',
  );
  const done = await reorder(reversed);
  t.equal(done.statusCode, 200, done.body);
  t.same(
    done.json().data.map((r: Rule) => r.id),
    reversed,
    'all 100 answered in their new order',
  );
  t.same(
    (await stored(ws, A)).map((r) => [r.id, r.position]),
    reversed.map((id, i) => [id, i]),
    'positions became the indexes',
  );

  t.equal((await h.request(ws.apiKey, 'DELETE', `/rules/${more[0]!.id}`)).statusCode, 200);
  t.equal((await create(ws, B, ruleBody('One too many'))).statusCode, 201, 'a delete frees a place');
});

t.test('paging: rules added between pages are seen once, none skipped; cursors checked', async (t) => {
  const { ws } = await setUp('limits-paging.example.com');
  const other = (await setUp('limits-paging-other.example.com')).ws;
  const [A, B] = ['a@limits-paging.example.com', 'b@limits-paging.example.com'];
  const first = await Promise.all(Array.from({ length: 7 }, (_, i) => created(ws, A, ruleBody(`First ${i}`))));
  await created(ws, B, ruleBody('On b'));

  const { seen, pages } = await walkPages(h, ws.apiKey, `/rules?address=${encodeURIComponent(A)}&limit=3`, () =>
    // Between pages: rules appended on the mailbox walked, and on another.
    Promise.all([
      created(ws, A, ruleBody('Added 1')),
      created(ws, A, ruleBody('Added 2')),
      created(ws, B, ruleBody('Added on b')),
    ]),
  );
  t.equal(pages, 3, 'pages of 3');
  t.equal(new Set(seen).size, seen.length, 'no rule twice');
  t.ok(
    first.every((r) => seen.includes(r.id)),
    'none of the rules there at the first page skipped',
  );
  const all = await stored(ws, A);
  t.same(
    seen,
    all.map((r) => r.id),
    'the walk saw the mailbox in run order, the rules appended meanwhile too',
  );
  t.equal(all.length, 9);

  const two = await page(ws, A, '&limit=2');
  const next = two.json().nextCursor as string;
  t.ok(next, two.body);
  const refusedCursors: [string, () => ReturnType<typeof page>][] = [
    ['not a cursor', () => page(ws, A, '&cursor=garbage')],
    [
      'tampered',
      () => page(ws, A, `&cursor=${encodeURIComponent(`${next.slice(0, -1)}${next.endsWith('A') ? 'B' : 'A'}`)}`),
    ],
    ['another workspace’s', () => page(other, A, `&cursor=${encodeURIComponent(next)}`)],
    ['another mailbox’s', () => page(ws, B, `&cursor=${encodeURIComponent(next)}`)],
  ];
  for (const [what, request] of refusedCursors)
    t.same(errorOf(await request()), [400, 'invalid_cursor', 'cursor'], `a cursor ${what}`);
  for (const limit of ['0', '101', 'x'])
    t.same(errorOf(await page(ws, A, `&limit=${limit}`)), [422, 'invalid_parameter', 'limit'], `limit ${limit}`);
  t.same(
    (await page(ws, A, `&limit=100&cursor=${encodeURIComponent(next)}`)).json().data.map((r: Rule) => r.id),
    all.slice(2).map((r) => r.id),
    'the cursor goes on with the rest, whatever the next limit',
  );
});

t.test('another workspace’s rule, or one a narrowed key does not reach, answers 404 and stays', async (t) => {
  const { ws } = await setUp('limits-foreign.example.com');
  const foreign = (await setUp('limits-foreign-other.example.com')).ws;
  const [A, B] = ['a@limits-foreign.example.com', 'b@limits-foreign.example.com'];
  const [onA, onB] = await Promise.all([created(ws, A, ruleBody('On a')), created(ws, B, ruleBody('On b'))]);
  const narrowed = await keyWith(ws, { scopes: ['rules:read', 'rules:write'], addressAllowlist: [A] });

  const tries: [string, string, Rule][] = [
    ['another workspace', foreign.apiKey, onA],
    ['a key narrowed to a@', narrowed, onB],
  ];
  for (const [who, key, rule] of tries) {
    for (const [method, body] of [['GET'], ['PATCH', { name: 'Taken over' }], ['DELETE']] as const)
      t.same(
        errorOf(await h.request(key, method, `/rules/${rule.id}`, body)),
        [404, 'resource_not_found', 'id'],
        `${who}: ${method}`,
      );
  }
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/rules/rul_nothing')), [404, 'resource_not_found', 'id']);
  t.same(await names(ws, A), ['On a'], 'nothing changed');
  t.same(await names(ws, B), ['On b'], 'nothing changed');
  t.equal((await h.request(narrowed, 'PATCH', `/rules/${onA.id}`, { name: 'Renamed' })).statusCode, 200, 'its own');
});

t.test('names that must exist: a reply template of the workspace; a mailbox the key reaches', async (t) => {
  const { ws } = await setUp('limits-names.example.com');
  const foreign = (await setUp('limits-names-other.example.com')).ws;
  const [A, B] = ['a@limits-names.example.com', 'b@limits-names.example.com'];
  const template = await replyTemplate(h, foreign.apiKey, 'Away');
  const kept = await created(ws, A, ruleBody('Kept'));

  for (const value of ['no-such-template', 'tpl_nothing', template.id])
    t.same(
      errorOf(await create(ws, A, ruleBody('Reply', { actions: [archive, { type: 'reply', value }] }))),
      [422, 'template_not_found', 'actions.1.value'],
      `create replying with ${value}`,
    );
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'PATCH', `/rules/${kept.id}`, { actions: [{ type: 'reply', value: 'no-such' }] }),
    ),
    [422, 'template_not_found', 'actions.0.value'],
    'update likewise',
  );
  t.match(await stored(ws, A), [{ id: kept.id, actions: [archive] }], 'nothing stored, nothing changed');
  t.equal((await stored(ws, A)).length, 1);

  const narrowed = await keyWith(ws, { scopes: ['rules:read', 'rules:write'], addressAllowlist: [A] });
  for (const address of [B, '*@limits-names.example.com'])
    t.same(
      errorOf(await create(ws, address, ruleBody('Elsewhere'), narrowed)),
      [422, 'capability_unsupported', 'address'],
      `create on ${address}`,
    );
  t.same(
    errorOf(
      await h.request(narrowed, 'POST', `/rules/reorder?address=${encodeURIComponent(B)}`, { ruleIds: [kept.id] }),
    ),
    [422, 'capability_unsupported', 'address'],
    'reorder of a mailbox it does not reach',
  );
  t.same(await names(ws, B), [], 'nothing stored on b@');
  t.same((await page(ws, B, '')).json().data, []);
  t.equal((await create(ws, A, ruleBody('Here'), narrowed)).statusCode, 201, 'its own mailbox');
});
