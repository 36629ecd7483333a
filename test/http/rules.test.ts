import t from 'tap';
import { errorOf } from '../support/domains.ts';
import { startSendingApp } from '../support/emails.ts';
import { outsideDomains, startTestInbound } from '../support/inbound.ts';
import { eventually } from '../support/receiver.ts';
import { replyTemplate } from '../support/rules.ts';

/** The rules API through inject, and rules run on mail arriving over SMTP. */
const { h, dns, setUp, keyWith, mx: recipients } = await startSendingApp(t);
const outside = await outsideDomains(dns);
const mx = await startTestInbound(t, h.system);
const { ws, a: boxAddress } = await setUp('rules.example.com');
const foreign = await setUp('rules-foreign.example.com');
const BOX = 'a@rules.example.com';
const fromOlga = { field: 'envelope_from', op: 'equals', value: 'olga@outside.test' };
const create = (body: object, address: string | null = BOX, key = ws.apiKey) =>
  h.request(key, 'POST', address === null ? '/rules' : `/rules?address=${encodeURIComponent(address)}`, body);

t.test('create at the end, list in order, patch merged, reorder, delete', async (t) => {
  const one = await create({ name: 'One', conditions: [fromOlga], actions: [{ type: 'label', value: 'archive' }] });
  t.equal(one.statusCode, 201, one.body);
  t.match(one.json(), {
    object: 'rule',
    address: BOX,
    position: 0,
    enabled: true,
    match: 'all',
    stopProcessing: false,
    matchCount: 0,
    lastMatchedAt: null,
    conditions: [{ negate: false, header: null }],
  });
  const two = (
    await create({ name: 'Two', conditions: [fromOlga], actions: [{ type: 'label', value: 'inbox' }] })
  ).json();
  t.equal(two.position, 1);
  t.same(errorOf(await create({ name: 'two', conditions: [fromOlga], actions: [{ type: 'reject' }] })), [
    409,
    'rule_name_taken',
    'name',
  ]);
  t.same(errorOf(await create({ name: 'X', conditions: [fromOlga], actions: [{ type: 'reject' }] }, null)), [
    422,
    'address_required',
    'address',
  ]);
  t.same(
    errorOf(
      await create({ name: 'X', conditions: [fromOlga], actions: [{ type: 'reject' }] }, 'b@rules-foreign.example.com'),
    ),
    [422, 'address_has_no_mailbox', 'address'],
  );
  t.same(
    errorOf(
      await create({
        name: 'X',
        conditions: [{ field: 'spam', op: 'equals', value: 'true' }],
        actions: [{ type: 'reject' }],
      }),
    ),
    [422, 'reject_needs_envelope', 'actions.0.type'],
  );
  t.same(errorOf(await create({ name: 'X', conditions: [fromOlga], actions: [{ type: 'label', value: 'nope' }] })), [
    422,
    'label_not_found',
    'actions.0.value',
  ]);
  const list = await h.request(ws.apiKey, 'GET', `/rules?address=${BOX}&limit=1`);
  t.match(list.json(), { data: [{ id: one.json().id }], hasMore: true });
  t.same(errorOf(await h.request(ws.apiKey, 'GET', '/rules')), [422, 'address_required', 'address']);
  const patched = await h.request(ws.apiKey, 'PATCH', `/rules/${two.id}`, {
    conditions: [{ field: 'spam', op: 'equals', value: 'true' }],
  });
  t.match(patched.json(), {
    name: 'Two',
    conditions: [{ field: 'spam' }],
    actions: [{ type: 'label', value: 'inbox' }],
  });
  t.same(errorOf(await h.request(ws.apiKey, 'PATCH', `/rules/${two.id}`, { actions: [{ type: 'reject' }] })), [
    422,
    'reject_needs_envelope',
    'actions.0.type',
  ]);
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/rules/reorder?address=${BOX}`, { ruleIds: [two.id] })), [
    422,
    'incomplete_order',
    'ruleIds',
  ]);
  const reordered = await h.request(ws.apiKey, 'POST', `/rules/reorder?address=${BOX}`, {
    ruleIds: [two.id, one.json().id],
  });
  t.same(
    reordered.json().data.map((r: { id: string }) => r.id),
    [two.id, one.json().id],
  );
  t.same(
    errorOf(await h.request(foreign.ws.apiKey, 'GET', `/rules/${two.id}`)),
    [404, 'resource_not_found', 'id'],
    'foreign: 404',
  );
  t.equal((await h.request(ws.apiKey, 'DELETE', `/rules/${two.id}`)).statusCode, 200);
  t.same(errorOf(await h.request(ws.apiKey, 'GET', `/rules/${two.id}`)), [404, 'resource_not_found', 'id']);
  t.equal((await h.request(ws.apiKey, 'DELETE', `/rules/${one.json().id}`)).statusCode, 200);
});

t.test('arriving mail: labelled by a rule, rejected at SMTP with 550, counted', async (t) => {
  const archive = (
    await create({
      name: 'Archive newsletters',
      conditions: [{ field: 'header', header: 'Subject', op: 'matches', value: 'news*' }],
      actions: [{ type: 'label', value: 'archive' }],
    })
  ).json();
  const reject = (
    await create({
      name: 'Refuse spammer',
      conditions: [{ field: 'envelope_from', op: 'matches', value: '*@spammer.test' }],
      actions: [{ type: 'reject', value: 'Not wanted here' }],
    })
  ).json();
  const raw = await outside.signed({ to: BOX, subject: 'Newsletter of the week', messageId: '<news1@outside.test>' });
  await mx.send({ from: 'olga@outside.test', to: [BOX] }, raw);
  const { rows } = await h.system.database.pool.query('SELECT thread_id FROM thread_messages WHERE header_id = $1', [
    'news1@outside.test',
  ]);
  const thread = (await h.request(ws.apiKey, 'GET', `/threads/${rows[0].thread_id}`)).json();
  t.match(thread.labels, ['archive'], 'the rule archived it');
  const refused = mx.send(
    { from: 'bulk@spammer.test', to: [BOX] },
    await outside.unsigned({ to: BOX, subject: 'Buy' }),
  );
  const error = await refused.then(
    () => null,
    (e: { responseCode?: number; response?: string }) => e,
  );
  t.equal(error?.responseCode, 550, 'a matching reject answers 550');
  t.match(error?.response, /Not wanted here/, "with the reject's own text");
  const { rows: kept } = await h.system.database.pool.query(
    'SELECT id FROM thread_messages WHERE workspace_id = $1 AND mail_from = $2',
    [ws.workspaceId, 'bulk@spammer.test'],
  );
  t.same(kept, [], 'a refused message is filed nowhere');
  const { rows: refusals } = await h.system.database.pool.query(
    'SELECT rule_ids, thread_id, rejected FROM rule_runs WHERE workspace_id = $1 AND $2 = ANY(rule_ids)',
    [ws.workspaceId, reject.id],
  );
  t.same(refusals, [{ rule_ids: [reject.id], thread_id: null, rejected: true }], 'the refusal is recorded as a run');
  const test = await h.request(ws.apiKey, 'POST', `/rules/test?address=${BOX}`, {
    raw: (await outside.unsigned({ to: BOX, subject: 'News again' })).toString(),
  });
  t.match(test.json(), { object: 'rule_test', matched: [{ ruleId: archive.id }], rejected: false });
  const counted = (await h.request(ws.apiKey, 'GET', `/rules/${archive.id}`)).json();
  t.match(counted, { matchCount: 1, lastMatchedAt: String });
  t.match((await h.request(ws.apiKey, 'GET', `/rules/${reject.id}`)).json(), { matchCount: 1 });
});

t.test('arriving mail: forwarded to a confirmed forward, replied to once per sender', async (t) => {
  // A destination inside the workspace is confirmed at once (addresses.md); delivery goes to the
  // loopback MX every domain of these tests resolves to.
  const fwd = await h.request(ws.apiKey, 'POST', `/addresses/${boxAddress.id}/forwards`, {
    destinations: ['b@rules.example.com'],
  });
  t.equal(fwd.statusCode, 200, 'a forward inside the workspace');
  const template = await replyTemplate(h, ws.apiKey, 'Away until Monday');
  const made = await create({
    name: 'Forward and answer',
    conditions: [{ field: 'header', header: 'Subject', op: 'matches', value: 'urgent*' }],
    actions: [
      { type: 'forward', value: 'b@rules.example.com' },
      { type: 'forward', value: 'stranger@example.org' },
      { type: 'reply', value: template.id },
    ],
  });
  t.equal(made.statusCode, 201, 'the rule');
  for (const n of [1, 2])
    await mx.send(
      { from: 'olga@outside.test', to: [BOX] },
      await outside.signed({ to: BOX, subject: `Urgent ${n}`, messageId: `<urgent${n}@outside.test>` }),
    );
  const forwarded = await eventually(async () => {
    const got = recipients.received.filter((m) => m.rcptTo.includes('b@rules.example.com'));
    return got.length === 2 && got;
  }, 20_000);
  t.ok(
    forwarded.every((m) => m.raw.toString().includes('message/rfc822')),
    'each arrival forwarded whole, attached',
  );
  const replies = await eventually(async () => {
    const got = recipients.received.filter((m) => m.rcptTo.includes('olga@outside.test'));
    return got.length > 0 && got;
  }, 20_000);
  t.match(replies[0]!.raw.toString(), /Auto-Submitted: auto-replied/i);
  t.match(replies[0]!.raw.toString(), /In-Reply-To: <urgent1@outside\.test>/);
  // What each run did is recorded with it: read once both runs are counted, not from what has
  // arrived so far (a late second reply would go unseen).
  const ruleId = made.json().id;
  await eventually(async () => (await h.request(ws.apiKey, 'GET', `/rules/${ruleId}`)).json().matchCount === 2, 20_000);
  const { rows: runRows } = await h.system.database.pool.query(
    'SELECT id FROM rule_runs WHERE workspace_id = $1 AND $2 = ANY(rule_ids) ORDER BY at, id',
    [ws.workspaceId, ruleId],
  );
  t.equal(runRows.length, 2, 'two runs of the rule');
  const runs = await Promise.all(
    runRows.map(async ({ id }: { id: string }) => {
      const events = await h.system.store.readStream(`ws-${ws.workspaceId}.rule-run-${id}`);
      return events.find((e) => e.type === 'RuleRunRecorded')!.data as {
        headerMessageId: string | null;
        matched: {
          ruleId: string;
          actions: { type: string; value: string | null; outcome: string; detail: string | null }[];
        }[];
      };
    }),
  );
  const actionsOf = (run: (typeof runs)[number]) => run.matched.find((m) => m.ruleId === ruleId)!.actions;
  t.same(
    runs.map((r) => r.headerMessageId),
    ['urgent1@outside.test', 'urgent2@outside.test'],
    'one run per arrival, in order',
  );
  t.match(actionsOf(runs[0]!), [
    { type: 'forward', value: 'b@rules.example.com', outcome: 'done' },
    { type: 'forward', value: 'stranger@example.org', outcome: 'skipped', detail: /not a confirmed forward/ },
    { type: 'reply', outcome: 'done' },
  ]);
  t.match(
    actionsOf(runs[1]!),
    [
      { type: 'forward', value: 'b@rules.example.com', outcome: 'done' },
      { type: 'forward', value: 'stranger@example.org', outcome: 'skipped', detail: /not a confirmed forward/ },
      { type: 'reply', outcome: 'skipped', detail: /24 hours/ },
    ],
    'one automatic reply per sender in 24 hours; never to an address that is not a confirmed forward',
  );
  t.notOk(
    recipients.received.some((m) => m.rcptTo.includes('stranger@example.org')),
    'nothing went to the stranger',
  );
});

t.test('the dry run: a narrowed key sees no rules of a mailbox it does not reach; a pasted rule checked', async (t) => {
  const B = 'b@rules.example.com';
  const onB = await create({ name: 'On b', conditions: [fromOlga], actions: [{ type: 'label', value: 'archive' }] }, B);
  t.equal(onB.statusCode, 201, onB.body);
  const raw = (await outside.unsigned({ to: B, subject: 'Hello b' })).toString();
  const narrowed = await keyWith(ws, { scopes: ['rules:read'], addressAllowlist: [BOX] });
  const unreached = await h.request(narrowed, 'POST', `/rules/test?address=${B}`, { raw });
  t.equal(unreached.statusCode, 200, unreached.body);
  t.match(unreached.json(), { object: 'rule_test', address: B, rejected: false });
  t.same(unreached.json().results, []);
  t.same(unreached.json().matched, []);
  const owner = await h.request(ws.apiKey, 'POST', `/rules/test?address=${B}`, { raw });
  t.equal(owner.statusCode, 200, owner.body);
  t.match(owner.json(), {
    results: [{ ruleId: onB.json().id, name: 'On b', matched: true }],
    matched: [{ ruleId: onB.json().id, name: 'On b', actions: [{ type: 'label', value: 'archive' }] }],
  });
  t.equal(owner.json().results.length, 1, "only b@'s rule");

  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/rules/test?address=${BOX}`, {
        raw,
        rule: { name: 'x', conditions: [fromOlga], actions: [{ type: 'label', value: 'nope' }] },
      }),
    ),
    [422, 'label_not_found', 'rule.actions.0.value'],
  );
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', `/rules/test?address=${BOX}`, {
        raw,
        rule: {
          name: 'x',
          conditions: [{ field: 'spam', op: 'equals', value: 'true' }],
          actions: [{ type: 'reject' }],
        },
      }),
    ),
    [422, 'reject_needs_envelope', 'rule.actions.0.type'],
  );
  const pasted = { name: 'x', conditions: [fromOlga], actions: [{ type: 'label', value: 'archive' }] };
  t.same(
    errorOf(
      await h.request(ws.apiKey, 'POST', '/rules/test?address=b@rules-foreign.example.com', { raw, rule: pasted }),
    ),
    [422, 'address_has_no_mailbox', 'address'],
    "a pasted rule needs a mailbox of the workspace: another workspace's address is none",
  );
  t.same(
    errorOf(await h.request(narrowed, 'POST', `/rules/test?address=${B}`, { raw, rule: pasted })),
    [422, 'capability_unsupported', 'address'],
    'a pasted rule on a mailbox the key does not reach is refused, not run',
  );
  t.same(errorOf(await h.request(ws.apiKey, 'POST', `/rules/test?address=${BOX}`, {})), [
    422,
    'invalid_parameter',
    'messageId',
  ]);
});

t.test("hour and weekday in the mailbox's time zone: the address's, or the catch-all's", async (t) => {
  const zoned = await setUp('rules-tz.example.com');
  const [A, B, ANY] = ['a@rules-tz.example.com', 'b@rules-tz.example.com', '*@rules-tz.example.com'];
  const tokyo = await h.request(zoned.ws.apiKey, 'PATCH', `/addresses/${zoned.a.id}`, { timeZone: 'Asia/Tokyo' });
  t.equal(tokyo.statusCode, 200, tokyo.body);
  // 00:30 UTC is 09:30 in Tokyo (no daylight saving there).
  const at = '2026-03-10T00:30:00.000Z';
  const nine = { field: 'hour', op: 'equals', value: '9' };
  const made = await create(
    { name: 'Nine in Tokyo', conditions: [nine], actions: [{ type: 'label', value: 'archive' }] },
    A,
    zoned.ws.apiKey,
  );
  t.equal(made.statusCode, 201, made.body);
  const raw = (await outside.unsigned({ to: A, subject: 'What time is it' })).toString();
  const dryRun = (address: string, body: object = {}) =>
    h.request(zoned.ws.apiKey, 'POST', `/rules/test?address=${encodeURIComponent(address)}`, { raw, at, ...body });

  const inTokyo = await dryRun(A);
  t.equal(inTokyo.statusCode, 200, inTokyo.body);
  t.match(inTokyo.json(), {
    at,
    timeZone: 'Asia/Tokyo',
    results: [{ ruleId: made.json().id, matched: true, conditions: [true] }],
    matched: [{ ruleId: made.json().id }],
  });
  const pasted = { rule: { name: 'Nine', conditions: [nine], actions: [{ type: 'label', value: 'archive' }] } };
  t.match((await dryRun(B, pasted)).json(), {
    timeZone: 'UTC',
    results: [{ matched: false, conditions: [false] }],
    matched: [],
  });
  t.match(
    (await dryRun(B, { ...pasted, at: '2026-03-10T09:30:00.000Z' })).json(),
    { results: [{ matched: true }] },
    'the same rule at 09:30 UTC in a UTC mailbox',
  );

  await h.request(zoned.ws.apiKey, 'PATCH', `/addresses/${zoned.a.id}`, { timeZone: 'UTC' });
  t.match((await dryRun(A)).json(), { timeZone: 'UTC', results: [{ matched: false }], matched: [] }, 'back to UTC');

  const catchAll = await h.request(zoned.ws.apiKey, 'PATCH', `/domains/${zoned.domain.id}`, {
    catchAll: true,
    catchAllTimeZone: 'Asia/Tokyo',
  });
  t.equal(catchAll.statusCode, 200, catchAll.body);
  t.match((await dryRun(ANY, pasted)).json(), { address: ANY, timeZone: 'Asia/Tokyo', results: [{ matched: true }] });

  // Arriving mail: the hour now in Tokyo, or the next (the clock may turn meanwhile), is never the
  // hour in UTC, nine hours behind.
  const hour = Number(
    new Intl.DateTimeFormat('en-US', { timeZone: 'Asia/Tokyo', hour: 'numeric', hourCycle: 'h23' }).format(new Date()),
  );
  const nowInTokyo = {
    name: 'Now in Tokyo',
    match: 'any',
    conditions: [hour, (hour + 1) % 24].map((h) => ({ field: 'hour', op: 'equals', value: String(h) })),
    actions: [{ type: 'label', value: 'archive' }],
  };
  await h.request(zoned.ws.apiKey, 'PATCH', `/addresses/${zoned.a.id}`, { timeZone: 'Asia/Tokyo' });
  const onA = (await create(nowInTokyo, A, zoned.ws.apiKey)).json();
  const onB = (await create(nowInTokyo, B, zoned.ws.apiKey)).json();
  for (const to of [A, B])
    await mx.send({ from: 'olga@outside.test', to: [to] }, await outside.signed({ to, subject: 'Now' }));
  t.match((await h.request(zoned.ws.apiKey, 'GET', `/rules/${onA.id}`)).json(), { matchCount: 1 }, 'Tokyo: matched');
  t.match((await h.request(zoned.ws.apiKey, 'GET', `/rules/${onB.id}`)).json(), { matchCount: 0 }, 'UTC: not');
});
