import t from 'tap';
import { SENDGRID_KEYS, sendgridData, startSendgridServer } from '../support/providers/sendgrid.ts';
import { startProviderImportsApp } from '../support/providers/app.ts';

// Contacts cost a command each here, so a few hundred: the paging, files and jobs are what is tested.
const seed = sendgridData(0, 600);
// One file an export, more rows than a step takes: each file is read over two steps.
seed.exportFileRows = 1000;
const sendgrid = await startSendgridServer(t, seed);
const { h, settled } = await startProviderImportsApp(t, { sendgrid: sendgrid.url });

const optedOut = new Set([
  ...seed.suppressions.unsubscribes!.map((u) => u.email.toLowerCase()),
  ...seed.groupSuppressions.map((g) => g.email.toLowerCase()),
]);
const subscribed = seed.contacts.filter((c) => !optedOut.has(c.email.toLowerCase())).length;
const unsubscribed = seed.contacts.length - subscribed;

t.test('SendGrid contacts: an export job per list and one of all, polled through a 429', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.full,
  });
  t.equal(inspected.statusCode, 200, inspected.body);
  t.ok(inspected.json().resources.includes('contacts'));
  t.same(inspected.json().counts.contacts, { count: 600, more: false });

  seed.throttlePolls = 1;
  const from = sendgrid.seen.length;
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.full,
    resources: ['audiences', 'contacts'],
  });
  t.equal(made.statusCode, 201, made.body);
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed', JSON.stringify(done));
  t.same(done.report.audiences, { imported: 3, existing: 0, failed: 0 });
  t.equal(unsubscribed, 24, 'the seed: 12 globally unsubscribed, 12 in a suppression group');
  t.same(done.report.contacts, { imported: subscribed, existing: 0, failed: 0, unsubscribed });
  t.same(done.report.errors, []);

  const seen = sendgrid.seen.slice(from);
  const posts = seen.filter((r) => r.method === 'POST');
  t.same(
    posts.map((r) => r.path),
    Array(4).fill('/v3/marketing/contacts/exports'),
  );
  t.same(
    posts.map((r) => JSON.parse(r.body).list_ids ?? null),
    [['list-0'], ['list-1'], ['list-2'], null],
    'each list exported on its own, then everyone',
  );
  t.ok(
    posts.every((r) => JSON.parse(r.body).file_type === 'json' && r.headers.authorization?.startsWith('Bearer SG.')),
  );
  const downloads = seen.filter((r) => r.path.startsWith('/exports/'));
  t.ok(
    downloads.length > 0 && downloads.every((r) => r.headers.authorization === undefined),
    'files downloaded without the key',
  );
  t.equal(downloads.length, 4, 'one file a job');
  t.equal(
    new Set(downloads.map((r) => r.path)).size,
    downloads.length,
    'each file downloaded once, though read a page a step',
  );
  const polls = seen.filter((r) => /^\/v3\/marketing\/contacts\/exports\/./.test(r.path));
  // Polls of a pending job are 20 ms apart here; the one answered 429 waits out its reset, 3 s ahead.
  const gaps = polls.slice(1).flatMap((r, i) => (r.path === polls[i]!.path ? [r.at - polls[i]!.at] : []));
  t.ok(
    gaps.some((g) => g >= 2000),
    `the 429's X-RateLimit-Reset waited for (gaps ${gaps.join(', ')} ms)`,
  );

  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  const idOf = (name: string) => audiences.find((a: { name: string }) => a.name === name).id;
  const two = (await h.request(ws.apiKey, 'GET', '/contacts/person5@sg-contacts.test')).json();
  t.match(two, { name: 'Person5 Grid', attributes: { plan: 'free', seats: '5', city: 'Lisbon' } });
  const lists = [0, 1, 2].map((i) => idOf(`SendGrid list ${i}`));
  const inLists = (contact: { audienceIds: string[] }) => lists.filter((id) => contact.audienceIds.includes(id));
  t.same(inLists(two), [lists[0], lists[2]], 'in both its lists');
  const none = (await h.request(ws.apiKey, 'GET', '/contacts/person9@sg-contacts.test')).json();
  t.same(inLists(none), [], 'in no list: in none of their audiences');
  t.notOk('city' in (await h.request(ws.apiKey, 'GET', '/contacts/person0@sg-contacts.test')).json().attributes);
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/person7@sg-contacts.test')).statusCode, 404, 'unsubscribed');
  t.equal((await h.request(ws.apiKey, 'GET', '/contacts/person13@sg-contacts.test')).statusCode, 404, 'in a group');

  const again = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.full,
    resources: ['audiences', 'contacts'],
  });
  const rerun = await settled(ws.apiKey, again.json().id);
  t.comment(
    `first run ${Date.parse(done.finishedAt) - Date.parse(done.startedAt)} ms, again ${Date.parse(rerun.finishedAt) - Date.parse(rerun.startedAt)} ms`,
  );
  t.same(rerun.report.contacts, { imported: 0, existing: subscribed, failed: 0, unsubscribed }, 'nothing twice');
});

t.test('SendGrid contacts: an export ending in failure is a report error', async (t) => {
  const ws = await h.workspace();
  seed.failExports = true;
  t.teardown(() => {
    seed.failExports = false;
  });
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.full,
    resources: ['contacts', 'domains'],
  });
  const done = await settled(ws.apiKey, made.json().id);
  t.equal(done.status, 'completed');
  t.match(done.report.errors, [
    { resource: 'contacts', sourceId: null, code: 'provider_failed', message: /ended failure: export could not/ },
  ]);
  t.same(done.report.contacts, { imported: 0, existing: 0, failed: 0, unsubscribed: 0 });
  t.equal(done.report.checklist.domains.length, 1, 'the next resource still read');
});

t.test('SendGrid contacts: a key without the marketing scope counts 0', async (t) => {
  const ws = await h.workspace();
  const inspected = await h.request(ws.apiKey, 'POST', '/provider-imports/inspect', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.suppressionsOnly,
  });
  t.same(inspected.json().counts.contacts, { count: 0, more: false });
});
