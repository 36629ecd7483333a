import t from 'tap';
import { startResumableImports } from '../support/providers/app.ts';
import { SENDGRID_KEYS, sendgridData, startSendgridServer } from '../support/providers/sendgrid.ts';

t.test('a SendGrid export killed after its download, resumed by another process: nothing twice', async (t) => {
  // Each list's export spans several files (500 rows a file), so the kill below lands inside the
  // first list's export whatever the import's pace: past its last file, the next export job would
  // be started and a crash could start it twice.
  const data = sendgridData(0, 3000);
  const sendgrid = await startSendgridServer(t, data);
  const { h, ws, contactsMade, fork, completed } = await startResumableImports(t, { sendgrid: sendgrid.url });
  const optedOut = new Set([
    ...data.suppressions.unsubscribes!.map((u) => u.email.toLowerCase()),
    ...data.groupSuppressions.map((g) => g.email.toLowerCase()),
  ]);
  const subscribed = data.contacts.filter((c) => !optedOut.has(c.email.toLowerCase())).length;

  const first = await fork();
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    provider: 'sendgrid',
    apiKey: SENDGRID_KEYS.full,
    resources: ['audiences', 'contacts'],
  });
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id;

  // A file of the first list's export (some 1,100 rows in three files) is downloaded and being applied.
  // Looked at every 5 ms, not by eventually's slowing polls: the kill must come soon after.
  for (const until = Date.now() + 200_000; (await contactsMade()) < 100; ) {
    if (Date.now() > until) throw new Error('no contacts made in time');
    await new Promise((r) => setTimeout(r, 5));
  }
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const atKill = await contactsMade();
  t.comment(`killed with ${atKill} contacts made`);
  t.not((await h.request(ws.apiKey, 'GET', `/provider-imports/${id}`)).json().status, 'completed', 'killed mid-way');

  await fork();
  const done = await completed(id, 60_000);
  t.same(done.report.contacts, {
    imported: subscribed,
    existing: 0,
    failed: 0,
    unsubscribed: data.contacts.length - subscribed,
  });
  t.equal(await contactsMade(), subscribed, 'one ContactCreated per subscribed person');
  const downloads = sendgrid.seen.filter((r) => r.path.startsWith('/exports/')).map((r) => r.path);
  t.ok(
    downloads.some((p, i) => downloads.indexOf(p) !== i),
    `the file under way downloaded again after the crash (${downloads.join(', ')})`,
  );
  t.ok(
    downloads.includes('/exports/export-4/1.json.gz'),
    'the export of everyone came in several files (500 rows a file)',
  );
  const posts = sendgrid.seen.filter((r) => r.method === 'POST');
  t.equal(posts.length, 4, 'no export job started twice: three lists and everyone');
  const list = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  const list2 = list.find((a: { name: string }) => a.name === 'SendGrid list 2');
  const member = (await h.request(ws.apiKey, 'GET', '/contacts/person5@sg-contacts.test')).json();
  t.ok(member.audienceIds.includes(list2.id), 'a person of two lists is in both audiences');
});
