import t from 'tap';
import { ensureDefaultAudience } from '../../commands/audiences/handlers.ts';
import { createContact, createContacts, touchContact } from '../../commands/contacts/handlers.ts';
import { addSuppression, addSuppressions } from '../../commands/suppressions/handlers.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { findContactByEmail, findContactById } from '../../projections/contacts/queries.ts';
import { startTestApp } from '../support/app.ts';

const NOW = () => new Date().toISOString();

/** One app for the file: each test makes a workspace of its own and reads only it. */
const h = await startTestApp(t);

t.test('createContact: the command other features call (contact events use it with source auto)', async (t) => {
  const { workspaceId } = await h.workspace();
  const other = await h.workspace();
  const actor = { workspaceId, kind: 'system' as const, id: null };
  const db = h.system.readDb;

  const first = await createContact(
    h.system.commands,
    actor,
    { email: '  Ada@Example.COM ', name: 'Ada', source: 'auto' },
    NOW(),
  );
  t.equal(first.created, true);
  t.match(first.contactId, /^con_[0-9a-f]{24}$/);
  // Read-your-writes: the row is there when the command returns.
  t.match(await findContactByEmail(db, workspaceId, 'ada@example.com'), {
    id: first.contactId,
    workspace_id: workspaceId,
    email: 'ada@example.com',
    name: 'Ada',
    source: 'auto',
  });
  t.match(await findContactById(db, workspaceId, first.contactId), { email: 'ada@example.com' });
  t.equal(
    await findContactById(db, other.workspaceId, first.contactId),
    undefined,
    'another workspace does not see it',
  );
  t.equal(await findContactByEmail(db, other.workspaceId, 'ada@example.com'), undefined);

  const again = await createContact(
    h.system.commands,
    actor,
    { email: 'ada@example.com', name: 'Other', source: 'manual' },
    NOW(),
  );
  t.same(
    again,
    { created: false, contactId: first.contactId },
    'an address in the book answers its id and writes nothing',
  );
  t.equal((await findContactByEmail(db, workspaceId, 'ada@example.com'))!.name, 'Ada');

  const racers = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      createContact(h.system.commands, actor, { email: 'race@example.com', name: `r${i}`, source: 'auto' }, NOW()),
    ),
  );
  t.equal(racers.filter((r) => r.created).length, 1, 'of 8 concurrent creates exactly one writes');
  t.equal(new Set(racers.map((r) => r.contactId)).size, 1, 'all answer the one id');

  const seenAt = new Date(Date.now() - 1000).toISOString();
  await touchContact(h.system.commands, actor, 'ADA@example.com', seenAt);
  t.equal((await findContactByEmail(db, workspaceId, 'ada@example.com'))!.last_seen_at!.toISOString(), seenAt);
  await touchContact(h.system.commands, actor, 'ada@example.com', new Date(Date.now() - 60_000).toISOString());
  t.equal(
    (await findContactByEmail(db, workspaceId, 'ada@example.com'))!.last_seen_at!.toISOString(),
    seenAt,
    'never moves back',
  );
  await touchContact(h.system.commands, actor, 'nobody@example.com', seenAt);
  t.equal(
    await findContactByEmail(db, workspaceId, 'nobody@example.com'),
    undefined,
    'an address not in the book stays out',
  );
});

t.test('search: the walk, the longer walk and the index lookup find the same rows in the same order', async (t) => {
  const { listContacts, searchQuery } = await import('../../projections/contacts/queries.ts');
  const { workspaceId } = await h.workspace();
  const actor = { workspaceId, kind: 'system' as const, id: null };
  const db = h.system.readDb;
  const base = Date.now() - 3_600_000;
  for (let i = 0; i < 60; i++) {
    const email = `u${i}@${i % 3 === 0 ? 'common' : 'rare'}${i % 7 === 0 ? 'x' : ''}.example`;
    await createContact(
      h.system.commands,
      actor,
      { email, name: i % 2 ? `Ada Smith ${i}` : `Bob Jones ${i}`, source: 'auto' },
      NOW(),
    );
    if (i % 4 !== 0)
      await touchContact(h.system.commands, actor, email, new Date(base + (i % 10) * 60_000).toISOString());
  }
  t.same(searchQuery('  Ada.SMITH  12 '), {
    all: "'ada' & 'smith' & '12':*",
    indexed: "'ada' & 'smith' & '12':*",
    rest: null,
    share: null,
  });
  const stats = {
    words: new Map([
      ['test', 1],
      ['ada', 0.05],
      ['com', 0.5],
      ['comet', 0.02],
      ['example', 0.3],
    ]),
    floor: 0.01,
  };
  t.match(
    searchQuery('x9@example.test', stats),
    { all: "'x9' & 'example' & 'test':*", indexed: "'x9'", rest: "'example' & 'test':*" },
    'common words are checked, not looked up',
  );
  t.match(
    searchQuery('ada co', stats),
    { all: "'ada' & 'co':*", indexed: "'ada'", rest: "'co':*" },
    'a beginning counts every word it begins',
  );
  t.match(
    searchQuery('example test', stats),
    { all: "'example' & 'test':*", indexed: "'example'", rest: "'test':*" },
    'all common: the rarest is looked up',
  );
  t.equal(
    searchQuery('x9@example.test', stats)!.share,
    0.01 * 0.3 * 1,
    'the expected share of rows: unlisted words at the floor',
  );
  t.equal(searchQuery('ada co', stats)!.share!.toFixed(3), (0.05 * 0.52).toFixed(3));
  t.equal(searchQuery('@ % -'), null);
  const walkAll = async (q: string, limit: number, walk: number) => {
    const seen: string[] = [];
    let after: [string | null, string] | null = null;
    for (;;) {
      const rows = await listContacts(db, workspaceId, { q }, limit, after, walk);
      const page = rows.slice(0, limit);
      seen.push(...page.map((r) => r.email));
      if (rows.length <= limit) return seen;
      const last = page.at(-1)!;
      after = [last.last_seen_at?.toISOString() ?? null, last.id];
    }
  };
  for (const q of ['ada', 'common', 'rarex', 'ada smith 1', 'bob 4', 'example', 'u1', 'nothing']) {
    const full = await walkAll(q, 1000, 100_000);
    t.ok(full.length >= 0);
    for (const [limit, walk] of [
      [3, 4],
      [5, 2],
      [2, 30],
      [50, 1],
    ] as const) {
      t.same(await walkAll(q, limit, walk), full, `${q} limit ${limit} walk ${walk}`);
    }
  }
  t.equal((await walkAll('ada', 1000, 100_000)).length, 30);
  t.equal((await walkAll('rarex', 1000, 100_000)).length, 6);
});

// An import's page (processes/provider-imports/fill.ts): the new ones appended together, the rest as one by one.
t.test('createContacts: a contact refused before deciding keeps its place among the others', async (t) => {
  const { workspaceId } = await h.workspace();
  const actor = { workspaceId, kind: 'system' as const, id: null };
  const audiences = await ensureDefaultAudience(h.system.commands, actor, NOW());
  const results = await createContacts(
    h.system.commands,
    actor,
    [
      { email: 'first@order.test', source: 'manual' },
      { email: 'lost@order.test', source: 'manual', audienceIds: ['aud_000000000000000000000000'] },
      { email: 'third@order.test', source: 'manual' },
    ],
    NOW(),
    audiences,
  );
  t.same(
    results.map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );
  t.match((results[1] as PromiseRejectedResult).reason, { code: 'audience_not_found', param: 'audienceIds.0' });
  const third = (results[2] as PromiseFulfilledResult<{ contactId: string }>).value;
  t.match(await findContactByEmail(h.system.readDb, workspaceId, 'third@order.test'), { id: third.contactId });
});

t.test('createContacts and addSuppressions: many at once, each as its own command would answer', async (t) => {
  const { workspaceId } = await h.workspace();
  const actor = { workspaceId, kind: 'system' as const, id: null };
  const db = h.system.readDb;
  const pool = h.system.database.pool;
  const there = await createContact(h.system.commands, actor, { email: 'there@many.test', source: 'manual' }, NOW());
  const audiences = await ensureDefaultAudience(h.system.commands, actor, NOW());
  const results = await createContacts(
    h.system.commands,
    actor,
    [
      ...Array.from({ length: 40 }, (_, i) => ({
        email: `New${i}@many.test`,
        name: `New ${i}`,
        source: 'manual' as const,
      })),
      { email: 'there@many.test', name: 'Again', source: 'manual' as const },
      { email: 'twice@many.test', source: 'manual' as const },
      { email: 'TWICE@many.test', source: 'manual' as const },
      { email: 'lost@many.test', source: 'manual' as const, audienceIds: ['aud_000000000000000000000000'] },
    ],
    NOW(),
    audiences,
  );
  t.equal(results.length, 44, 'one outcome a contact, in their order');
  const made = results.slice(0, 40).map((r) => (r.status === 'fulfilled' ? r.value : null));
  t.ok(
    made.every((m) => m?.created === true),
    'the new ones are made',
  );
  // Read-your-writes once for all: the rows are there when the command returns.
  for (const [i, m] of made.entries())
    t.match(await findContactByEmail(db, workspaceId, `new${i}@many.test`), { id: m!.contactId, name: `New ${i}` });
  t.same(
    results[40],
    { status: 'fulfilled', value: { created: false, contactId: there.contactId } },
    'one in the book is found',
  );
  t.equal((await findContactByEmail(db, workspaceId, 'there@many.test'))!.name, null, 'and left as it was');
  const twice = results.slice(41, 43).map((r) => (r.status === 'fulfilled' ? r.value : null));
  t.same(
    twice.map((m) => m?.created),
    [true, false],
    'one address twice: made once',
  );
  t.equal(twice[0]!.contactId, twice[1]!.contactId);
  const refused = results[43]!;
  t.ok(refused.status === 'rejected' && refused.reason instanceof DomainError, 'an unknown audience refuses that one');
  t.match((results[43] as PromiseRejectedResult).reason, { code: 'audience_not_found', param: 'audienceIds.0' });
  t.equal(await findContactByEmail(db, workspaceId, 'lost@many.test'), undefined);
  const { rows } = await pool.query(
    `SELECT count(DISTINCT tx_id)::int AS calls FROM es_events WHERE stream_id LIKE $1`,
    [`%${workspaceId}.contact-new%`],
  );
  t.equal(rows[0].calls, 1, 'the new ones appended in one call');

  const suppressed = await addSuppression(
    h.system.commands,
    actor,
    { email: 'old@many.test', reason: 'manual', detail: null },
    NOW(),
  );
  const added = await addSuppressions(
    h.system.commands,
    actor,
    [
      { email: 'Bounced@many.test', reason: 'bounce', detail: 'hard' },
      { email: 'old@many.test', reason: 'complaint', detail: null },
    ],
    NOW(),
  );
  t.match(added, [
    { status: 'fulfilled', value: { created: true, entry: { email: 'bounced@many.test', reason: 'bounce' } } },
    {
      status: 'fulfilled',
      value: { created: false, suppressionId: suppressed.suppressionId, entry: { reason: 'manual' } },
    },
  ]);
});
