import t from 'tap';
import { LABELS_MAX } from '../../domain/labels/decide.ts';
import { rebuildProjection } from '../../projections/rebuild.ts';
import { errorOf, publish } from '../support/domains.ts';
import { walkPages } from '../support/paging.ts';
import { startSendingApp } from '../support/emails.ts';
import { outsideDomains, startTestInbound } from '../support/inbound.ts';

/**
 * Labels: system labels, custom labels per mailbox, and threads carrying them (mail arriving
 * through the listener from nodemailer, as in threads.test.ts).
 */
const { h, dns, setUp, keyWith } = await startSendingApp(t);
const outside = await outsideDomains(dns);
const mx = await startTestInbound(t, h.system);
const setup = await setUp('labels.example.com');
const { ws } = setup;
const foreign = await setUp('labels-foreign.example.com');
const SYSTEM = ['inbox', 'archive', 'spam', 'trash', 'sent', 'drafts'];

let n = 0;
/** Mail from outside to `to`; answers its thread as GET shows it. */
async function arrive(to: string, subject: string, key = ws.apiKey) {
  const messageId = `<l${++n}@outside.test>`;
  await mx.send({ from: 'olga@outside.test', to: [to] }, await outside.signed({ to, messageId, subject }));
  const { rows } = await h.system.database.pool.query('SELECT thread_id FROM thread_messages WHERE header_id = $1', [
    messageId.slice(1, -1),
  ]);
  return (await h.request(key, 'GET', `/threads/${rows[0].thread_id}`)).json();
}

const label = async (address: string, name: string, color?: string | null, key = ws.apiKey) => {
  const res = await h.request(key, 'POST', '/labels', { address, name, ...(color === undefined ? {} : { color }) });
  if (res.statusCode !== 201) throw new Error(res.body);
  return res.json();
};
const ids = (res: { json(): { data: { id: string }[] } }) => res.json().data.map((x) => x.id);

t.test('create, list, read, rename, colour and delete; system labels are read only', async (t) => {
  const created = await h.request(ws.apiKey, 'POST', '/labels', {
    address: ' A@Labels.Example.com ',
    name: '  Work ',
    color: '#FFAA00',
  });
  t.equal(created.statusCode, 201, created.body);
  const work = created.json();
  t.match(work, {
    object: 'label',
    id: /^lbl_[0-9a-f]{24}$/,
    type: 'custom',
    name: 'Work',
    color: '#ffaa00',
    address: 'a@labels.example.com',
  });
  t.same((await h.request(ws.apiKey, 'GET', `/labels/${work.id}`)).json(), work);

  const list = await h.request(ws.apiKey, 'GET', '/labels?address=a@labels.example.com');
  t.same(ids(list), [...SYSTEM, work.id], 'system labels first, then the custom ones');
  t.match(list.json().data[0], { id: 'inbox', type: 'system', name: 'inbox', address: null, color: null });
  t.match((await h.request(ws.apiKey, 'GET', '/labels/sent')).json(), { id: 'sent', type: 'system' });

  const renamed = await h.request(ws.apiKey, 'PATCH', `/labels/${work.id}`, { name: 'Jobs', color: null });
  t.equal(renamed.statusCode, 200, renamed.body);
  t.match(renamed.json(), { id: work.id, name: 'Jobs', color: null });
  t.match((await h.request(ws.apiKey, 'PATCH', `/labels/${work.id}`, { color: '#000000' })).json(), {
    name: 'Jobs',
    color: '#000000',
  });
  // Its own name again, in another case, is a rename, not a clash.
  t.match((await h.request(ws.apiKey, 'PATCH', `/labels/${work.id}`, { name: 'JOBS' })).json(), { name: 'JOBS' });

  for (const method of ['PATCH', 'DELETE'] as const)
    t.same(
      errorOf(await h.request(ws.apiKey, method, '/labels/inbox', method === 'PATCH' ? { name: 'x' } : undefined)),
      [422, 'invalid_parameter', 'id'],
    );

  const deleted = await h.request(ws.apiKey, 'DELETE', `/labels/${work.id}`);
  t.same(deleted.json(), { object: 'label', id: work.id, deleted: true });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/labels/${work.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'DELETE', `/labels/${work.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/labels/lbl_000000000000000000000000')), [
    404,
    'resource_not_found',
    'id',
  ]);
});

t.test('names, colours, mailboxes and the limit', async (t) => {
  const mine = await label('b@labels.example.com', 'Receipts');
  for (const name of ['receipts', 'RECEIPTS ', 'Inbox', 'trash'])
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/labels', { address: 'b@labels.example.com', name })), [
      409,
      'label_name_taken',
      'name',
    ]);
  const other = await label('b@labels.example.com', 'Other');
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/labels/${other.id}`, { name: 'receipts' })), [
    409,
    'label_name_taken',
    'name',
  ]);
  t.match(await label('a@labels.example.com', 'Receipts'), { name: 'Receipts' }, 'names are per mailbox');
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/labels', { address: '*@labels.example.com', name: 'Catch' })), [
    422,
    'address_has_no_mailbox',
    'address',
  ]);
  const on = await h.request(ws.apiKey, 'PATCH', `/domains/${setup.domain.id}`, { catchAll: true });
  t.equal(on.statusCode, 200, on.body);
  t.match(
    await label('*@labels.example.com', 'Catch'),
    { address: '*@labels.example.com' },
    'a catch-all that is on is one',
  );

  t.match(await label('b@labels.example.com', 'x'.repeat(100)), { name: 'x'.repeat(100) });
  for (const [body, code, param] of [
    [{ address: 'b@labels.example.com', name: 'y'.repeat(101) }, 'invalid_parameter', 'name'],
    [{ address: 'b@labels.example.com', name: '   ' }, 'invalid_parameter', 'name'],
    [{ address: 'b@labels.example.com', name: 'Red', color: 'red' }, 'invalid_parameter', 'color'],
    [{ address: 'b@labels.example.com', name: 'Red', color: '#12345' }, 'invalid_parameter', 'color'],
    [{ address: 'not an address', name: 'Red' }, 'invalid_parameter', 'address'],
    [{ name: 'Red' }, 'invalid_parameter', 'address'],
    [{ address: 'b@labels.example.com', name: 'Red', starred: true }, 'unknown_parameter', 'starred'],
  ] as const)
    t.same(errorOf(await h.request(ws.apiKey, 'POST', '/labels', body)), [422, code, param], JSON.stringify(body));
  const names = (await h.request(ws.apiKey, 'GET', '/labels?address=b@labels.example.com&limit=100'))
    .json()
    .data.map((x: { name: string }) => x.name);
  t.ok(names.includes('Receipts'), 'the list names the labels made');
  t.notOk(names.includes('Red'), 'nothing refused was made');
  t.notOk(
    names.some((x: string) => x.trim() === '' || x === 'y'.repeat(101)),
    'no blank or overlong name was made',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/labels', { address: 'off@labels.example.com', name: 'Off' })), [
    422,
    'address_has_no_mailbox',
    'address',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', '/labels', { address: 'nobody@labels.example.com', name: 'N' })), [
    404,
    'address_not_found',
    'address',
  ]);
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/labels', { address: 'a@labels-foreign.example.com', name: 'N' })),
    [404, 'address_not_found', 'address'],
  );
  t.equal((await h.request(ws.apiKey, 'GET', `/labels/${mine.id}`)).statusCode, 200);

  const res = await h.request(ws.apiKey, 'POST', '/addresses', { address: 'full@labels.example.com' });
  t.equal(res.statusCode, 201, res.body);
  for (let i = 0; i < LABELS_MAX; i++) await label('full@labels.example.com', `L${i}`);
  t.same(
    errorOf(await h.request(ws.apiKey, 'POST', '/labels', { address: 'full@labels.example.com', name: 'One more' })),
    [422, 'label_limit_reached', null],
  );
});

t.test('threads carry custom labels: add, remove, filter, rename and delete', async (t) => {
  const work = await label('a@labels.example.com', 'Projects');
  const home = await label('a@labels.example.com', 'Home');
  const elsewhere = await label('b@labels.example.com', 'Elsewhere');
  const thread = await arrive('a@labels.example.com', 'Plans');
  const other = await arrive('a@labels.example.com', 'Other plans');

  const added = await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { addLabels: [work.id, home.id] });
  t.equal(added.statusCode, 200, added.body);
  t.same(added.json().labels, ['inbox', work.id, home.id]);
  t.same(ids(await h.request(ws.apiKey, 'GET', `/threads?label=${work.id}`)), [thread.id]);
  t.same(ids(await h.request(ws.apiKey, 'GET', `/threads?label=${home.id}&address=a@labels.example.com`)), [thread.id]);
  t.same(ids(await h.request(ws.apiKey, 'GET', `/threads?label=${home.id}&address=b@labels.example.com`)), []);
  // Adding again changes nothing; a move keeps the custom labels.
  const moved = await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, {
    addLabels: [work.id],
    label: 'archive',
  });
  t.same(moved.json().labels, ['archive', work.id, home.id]);

  for (const [body, code, param] of [
    [{ addLabels: [elsewhere.id] }, 'label_not_found', 'addLabels.0'],
    [{ addLabels: [work.id, 'lbl_000000000000000000000000'] }, 'label_not_found', 'addLabels.1'],
    [{ removeLabels: ['nothing'] }, 'label_not_found', 'removeLabels.0'],
    [{ addLabels: ['inbox'] }, 'label_not_directly_settable', 'addLabels.0'],
    [{ addLabels: [work.id], removeLabels: [work.id] }, 'invalid_parameter', 'removeLabels.0'],
    [{ removeLabels: [work.id], label: 'sent' }, 'label_not_directly_settable', 'label'],
    [{ removeLabels: [work.id], label: work.id }, 'label_not_found', 'label'],
    [{ addLabels: 'x' }, 'invalid_parameter', 'addLabels'],
  ] as const)
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, body)), [422, code, param]);
  t.same(
    (await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json().labels,
    ['archive', work.id, home.id],
    'a refused request changed nothing',
  );
  // An id of the right shape that no label has: its last digit changed (to 0, or to 1 from 0).
  const unknown = elsewhere.id.slice(0, -1) + (elsewhere.id.endsWith('0') ? '1' : '0');
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/threads?label=${unknown}`)), [422, 'label_not_found', 'label']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/threads?label=work')), [422, 'label_not_found', 'label']);

  await h.request(ws.apiKey, 'PATCH', `/threads/${other.id}`, { addLabels: [home.id] });
  t.same(ids(await h.request(ws.apiKey, 'GET', `/threads?label=${home.id}`)), [other.id, thread.id]);
  const removed = await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { removeLabels: [work.id] });
  t.same(removed.json().labels, ['archive', home.id]);
  t.same(ids(await h.request(ws.apiKey, 'GET', `/threads?label=${work.id}`)), []);

  await h.request(ws.apiKey, 'PATCH', `/labels/${home.id}`, { name: 'House' });
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json().labels, ['archive', home.id]);
  t.equal((await h.request(ws.apiKey, 'DELETE', `/labels/${home.id}`)).statusCode, 200);
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json().labels, ['archive'], 'it left the thread');
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${other.id}`)).json().labels, ['inbox'], 'and every other');
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { addLabels: [home.id] })), [
    422,
    'label_not_found',
    'addLabels.0',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/threads?label=${home.id}`)), [422, 'label_not_found', 'label']);
});

t.test('paging: system labels then custom ones, with a label made between pages', async (t) => {
  const address = 'pages@labels.example.com';
  t.equal((await h.request(ws.apiKey, 'POST', '/addresses', { address })).statusCode, 201);
  const made = [];
  for (const name of ['P1', 'P2', 'P3']) made.push((await label(address, name)).id);
  const { seen, pages } = await walkPages(h, ws.apiKey, `/labels?address=${address}&limit=4`, async () =>
    made.push((await label(address, 'P4')).id),
  );
  t.same(seen, [...SYSTEM, ...made], 'every label once, the newcomer at the end');
  t.equal(pages, 3);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/labels?limit=101')), [422, 'invalid_parameter', 'limit']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/labels?cursor=forged')), [400, 'invalid_cursor', 'cursor']);
});

t.test(
  "another workspace's labels are 404; narrowed keys see their mailboxes' labels; scopes; test keys",
  async (t) => {
    const theirs = await label('a@labels-foreign.example.com', 'Theirs', null, foreign.ws.apiKey);
    const thread = await arrive('a@labels.example.com', 'Foreign label');
    for (const [method, body] of [
      ['GET', undefined],
      ['PATCH', { name: 'Mine now' }],
      ['DELETE', undefined],
    ] as const)
      t.same(errorOf(await h.request(ws.apiKey, method, `/labels/${theirs.id}`, body)), [
        404,
        'resource_not_found',
        'id',
      ]);
    t.notOk(ids(await h.request(ws.apiKey, 'GET', '/labels?limit=100')).includes(theirs.id));
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { addLabels: [theirs.id] })), [
      422,
      'label_not_found',
      'addLabels.0',
    ]);
    t.same(errorOf(await h.request(ws.apiKey, 'GET', `/threads?label=${theirs.id}`)), [
      422,
      'label_not_found',
      'label',
    ]);
    t.match((await h.request(foreign.ws.apiKey, 'GET', `/labels/${theirs.id}`)).json(), { name: 'Theirs' });

    const a = await label('a@labels.example.com', 'For a');
    const b = await label('b@labels.example.com', 'For b');
    const narrowed = await keyWith(ws, {
      scopes: ['labels:read', 'labels:write', 'threads:read', 'threads:write'],
      addressAllowlist: ['a@labels.example.com'],
    });
    const seen = ids(await h.request(narrowed, 'GET', '/labels?limit=100'));
    t.ok(seen.includes(a.id));
    t.notOk(seen.includes(b.id));
    t.same(seen.slice(0, 6), SYSTEM);
    t.same(errorOf(await h.request(narrowed, 'GET', `/labels/${b.id}`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(narrowed, 'DELETE', `/labels/${b.id}`)), [404, 'resource_not_found', 'id']);
    t.same(errorOf(await h.request(narrowed, 'GET', `/threads?label=${b.id}`)), [422, 'label_not_found', 'label']);
    t.same(errorOf(await h.request(narrowed, 'POST', '/labels', { address: 'b@labels.example.com', name: 'No' })), [
      422,
      'capability_unsupported',
      'address',
    ]);
    const inside = await h.request(narrowed, 'POST', '/labels', { address: 'a@labels.example.com', name: 'Narrow' });
    t.equal(inside.statusCode, 201, inside.body);
    t.same(
      (await h.request(narrowed, 'PATCH', `/threads/${thread.id}`, { addLabels: [inside.json().id] })).json().labels,
      ['inbox', inside.json().id],
    );
    const byDomain = await keyWith(ws, { scopes: ['labels:read'], domainAllowlist: ['labels.example.com'] });
    t.equal((await h.request(byDomain, 'GET', `/labels/${b.id}`)).statusCode, 200);

    const readOnly = await keyWith(ws, { scopes: ['labels:read'] });
    t.same(errorOf(await h.request(readOnly, 'POST', '/labels', { address: 'a@labels.example.com', name: 'R' })), [
      403,
      'insufficient_scope',
      null,
    ]);
    t.same(errorOf(await h.request(readOnly, 'DELETE', `/labels/${a.id}`)), [403, 'insufficient_scope', null]);
    const threadsOnly = await keyWith(ws, { scopes: ['threads:read'] });
    t.same(errorOf(await h.request(threadsOnly, 'GET', '/labels')), [403, 'insufficient_scope', null]);
    // Labels are configuration both modes share: a test key reads them and changes none.
    const test = await keyWith(ws, { scopes: ['labels:read', 'labels:write'], mode: 'test' });
    t.equal((await h.request(test, 'GET', `/labels/${a.id}`)).statusCode, 200);
    t.same(errorOf(await h.request(test, 'POST', '/labels', { address: 'a@labels.example.com', name: 'T' })), [
      403,
      'beyond_caller_authority',
      null,
    ]);
  },
);

t.test("renaming to a system label's name, in any case, is refused", async (t) => {
  const custom = await label('b@labels.example.com', 'Renamed');
  for (const name of ['Inbox', 'INBOX', ' inbox ', 'Drafts', 'sPaM'])
    t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/labels/${custom.id}`, { name, color: '#123456' })), [
      409,
      'label_name_taken',
      'name',
    ]);
  t.same((await h.request(ws.apiKey, 'GET', `/labels/${custom.id}`)).json(), custom, 'name and colour unchanged');
  t.match((await h.request(ws.apiKey, 'PATCH', `/labels/${custom.id}`, { name: 'Inbox 2' })).json(), {
    name: 'Inbox 2',
  });
});

t.test("a deleted address's labels leave its threads; other mailboxes keep theirs", async (t) => {
  const made = await h.request(ws.apiKey, 'POST', '/addresses', { address: 'leaving@labels.example.com' });
  t.equal(made.statusCode, 201, made.body);
  const leaving = await label('leaving@labels.example.com', 'Leaving');
  const staying = await label('a@labels.example.com', 'Staying');
  const gone = await arrive('leaving@labels.example.com', 'Goodbye');
  const kept = await arrive('a@labels.example.com', 'Still here');
  t.same((await h.request(ws.apiKey, 'PATCH', `/threads/${gone.id}`, { addLabels: [leaving.id] })).json().labels, [
    'inbox',
    leaving.id,
  ]);
  await h.request(ws.apiKey, 'PATCH', `/threads/${kept.id}`, { addLabels: [staying.id] });

  t.equal((await h.request(ws.apiKey, 'DELETE', `/addresses/${made.json().id}`)).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/labels/${leaving.id}`)), [404, 'resource_not_found', 'id']);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/threads?label=${leaving.id}`)), [422, 'label_not_found', 'label']);
  t.same(
    (await h.request(ws.apiKey, 'GET', `/threads/${gone.id}`)).json().labels,
    ['inbox'],
    'the thread stays, without the label',
  );
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${kept.id}`)).json().labels, ['inbox', staying.id]);
  t.same(ids(await h.request(ws.apiKey, 'GET', `/threads?label=${staying.id}`)), [kept.id]);
});

t.test("a deleted domain's catch-all labels leave its threads", async (t) => {
  const name = 'labels-gone.example.com';
  const domain = (await h.request(ws.apiKey, 'POST', '/domains', { domain: name })).json();
  publish(dns, domain.records);
  t.equal((await h.request(ws.apiKey, 'POST', `/domains/${domain.id}/verify`)).statusCode, 200);
  t.equal((await h.request(ws.apiKey, 'PATCH', `/domains/${domain.id}`, { catchAll: true })).statusCode, 200);
  const catchAll = await label(`*@${name}`, 'Caught');
  const thread = await arrive(`anyone@${name}`, 'Into the catch-all');
  t.same((await h.request(ws.apiKey, 'PATCH', `/threads/${thread.id}`, { addLabels: [catchAll.id] })).json().labels, [
    'inbox',
    catchAll.id,
  ]);
  const other = await label('a@labels.example.com', 'Not caught');
  const kept = await arrive('a@labels.example.com', 'Elsewhere');
  await h.request(ws.apiKey, 'PATCH', `/threads/${kept.id}`, { addLabels: [other.id] });

  const deleted = await h.request(ws.apiKey, 'DELETE', `/domains/${domain.id}`);
  t.equal(deleted.statusCode, 200, deleted.body);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/labels/${catchAll.id}`)), [404, 'resource_not_found', 'id']);
  t.same(
    (await h.request(ws.apiKey, 'GET', `/threads/${thread.id}`)).json().labels,
    ['inbox'],
    'the thread stays, without the label',
  );
  t.same((await h.request(ws.apiKey, 'GET', `/threads/${kept.id}`)).json().labels, ['inbox', other.id]);
});

t.test('the threads read model with its labels rebuilds from the log as it stands live', async (t) => {
  const { db, pool } = h.system.database;
  const projector = h.system.runner.projectors.find((p) => p.name === 'threads')!;
  const rows = async (schema: string) => ({
    threads: (
      await pool.query(`SELECT id, label, unread, custom_labels, message_count FROM ${schema}.threads ORDER BY id`)
    ).rows,
    labels: (await pool.query(`SELECT * FROM ${schema}.labels ORDER BY id`)).rows,
  });
  const live = await rows('public');
  t.ok(live.threads.some((r: any) => r.custom_labels.length > 0));
  await rebuildProjection(db, pool, h.system.store, h.system.runner, projector, {
    swap: false,
    schema: 'compare_threads',
  });
  t.same(await rows('compare_threads'), live);
  await pool.query('DROP SCHEMA compare_threads CASCADE');
});
