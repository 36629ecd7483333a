import t from 'tap';
import { startResumableImports } from '../support/providers/app.ts';
import { RESEND_KEYS, resendData, startResendServer } from '../support/providers/resend.ts';
import { eventually } from '../support/receiver.ts';

t.test('an import killed mid-way and resumed by another process: nothing twice, the counts right', async (t) => {
  const data = resendData({ audiences: 4, perAudience: 250, unsubscribedEvery: 10 });
  const resend = await startResendServer(t, data);
  // This process serves the api and reads; the import runs in the children.
  const { h, ws, contactsMade, fork, completed } = await startResumableImports(t, { resend: resend.url });
  const pool = h.system.database.pool;
  const people = new Map<string, boolean>();
  for (const list of data.contacts.values()) for (const c of list) people.set(c.email.toLowerCase(), !c.unsubscribed);
  const subscribed = [...people.values()].filter(Boolean).length;

  const first = await fork();
  const made = await h.request(ws.apiKey, 'POST', '/provider-imports', {
    apiKey: RESEND_KEYS.full,
    resources: ['audiences', 'contacts', 'domains'],
  });
  t.equal(made.statusCode, 201, made.body);
  const id = made.json().id;

  // Killed when a few pages of contacts are in, most likely in the middle of one (pages of 100).
  await eventually(async () => (await contactsMade()) >= 350, 200_000);
  first.kill('SIGKILL');
  await new Promise((r) => first.once('exit', r));
  const atKill = await contactsMade();
  const cut = await pool.query(
    "SELECT count(*) AS n FROM provider_import_sources WHERE import_id = $1 AND resource = 'contacts' AND target_id IS NULL",
    [id],
  );
  t.comment(`killed with ${atKill} contacts made, ${cut.rows[0].n} rows of the page under way not yet recorded`);
  t.not((await h.request(ws.apiKey, 'GET', `/provider-imports/${id}`)).json().status, 'completed', 'killed mid-way');

  await fork();
  const done = await completed(id);
  t.same(done.report.audiences, { imported: 4, existing: 0, failed: 0 });
  t.same(done.report.contacts, {
    imported: subscribed,
    existing: 0,
    failed: 0,
    unsubscribed: people.size - subscribed,
  });
  t.equal(done.report.checklist.domains.length, 2, 'the checklist once, though its page may be read twice');

  t.equal(await contactsMade(), subscribed, 'one ContactCreated per subscribed person');
  const streams = await pool.query(
    "SELECT count(DISTINCT stream_id) AS n FROM es_events WHERE type = 'ContactCreated' AND metadata->>'workspaceId' = $1",
    [ws.workspaceId],
  );
  t.equal(Number(streams.rows[0].n), subscribed);
  const audiences = await pool.query(
    "SELECT count(*) AS n FROM es_events WHERE type = 'AudienceCreated' AND metadata->>'workspaceId' = $1 AND data->>'name' LIKE 'Resend list %'",
    [ws.workspaceId],
  );
  t.equal(Number(audiences.rows[0].n), 4, 'each list one audience');
  // Everyone in the lists they were in: the shared five of each list are in two audiences.
  const list = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  const second1 = list.find((a: { name: string }) => a.name === 'Resend list 1');
  const member = (
    await h.request(ws.apiKey, 'GET', `/contacts/${encodeURIComponent('person246@example.test')}`)
  ).json();
  t.ok(member.audienceIds.includes(second1.id), 'a person of two lists is in both audiences');
  const vault = await pool.query("SELECT count(*) AS n FROM vault_secrets WHERE id LIKE 'provider-import:%'");
  t.equal(Number(vault.rows[0].n), 0, 'the key is erased at the end');
});
