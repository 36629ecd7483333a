import t from 'tap';
import type { Actor } from '../../commands/execute.ts';
import { emptyReport } from '../../domain/provider-imports/providers.ts';
import type { SourceItem } from '../../infra/providers/port.ts';
import { checkReceiverUrl } from '../../infra/net/outbound-url.ts';
import { applyPage, recordMarks, type FillContext, type PageMarks } from '../../processes/provider-imports/fill.ts';
import { startTestApp } from '../support/app.ts';

// A page's rows run together (fill.ts); what a row refused does must read as it did one at a time.
t.test('a page written together: refused rows in the report in page order, their claims let go', async (t) => {
  const h = await startTestApp(t, { deliver: false });
  const ws = await h.workspace();
  const pool = h.system.database.pool;
  const actor: Actor = { workspaceId: ws.workspaceId, kind: 'system', id: 'pim_fill' };
  const fill = (importId: string): FillContext => ({
    commands: h.system.commands,
    pool,
    checkUrl: (url) => checkReceiverUrl(url, { allowPrivate: false }),
    actor: { ...actor, id: importId },
    importId,
    provider: 'brevo',
  });
  const checkpoint = async (importId: string, marks: PageMarks | null) => {
    const client = await pool.connect();
    try {
      if (marks) await recordMarks(client, { workspaceId: ws.workspaceId, provider: 'brevo', importId }, marks);
    } finally {
      client.release();
    }
  };
  const bad = new Set([7, 150, 296]);
  const suppressions: SourceItem[] = Array.from({ length: 300 }, (_, i) => ({
    resource: 'suppressions',
    sourceId: `s${i}`,
    email: bad.has(i) ? `not an address ${i}` : `blocked${i}@fill.test`,
    reason: 'bounce',
    detail: 'brevo: hardBounce',
  }));

  const first = await applyPage(fill('pim_first'), suppressions, emptyReport());
  t.same(first.report.suppressions, { imported: 297, existing: 0, failed: 3 });
  t.same(
    first.report.errors.map((e) => [e.sourceId, e.code]),
    [
      ['s7', 'invalid_email_address'],
      ['s150', 'invalid_email_address'],
      ['s296', 'invalid_email_address'],
    ],
    'in the order of the page',
  );
  t.equal(first.marks!.made.size, 297);
  t.same(first.marks!.failed.sort(), ['s150', 's296', 's7']);
  // Written with the checkpoint's statement (worker.ts): one not taken (the run moved on by
  // another step) records nothing of the page.
  const untaken = await recordMarks(
    pool,
    { workspaceId: ws.workspaceId, provider: 'brevo', importId: 'pim_first' },
    first.marks,
    { sql: 'SELECT 1 WHERE false', params: [] },
  );
  t.equal(untaken.rowCount, 0);
  const unmarked = await pool.query(
    `SELECT count(*) FILTER (WHERE target_id IS NOT NULL) AS made, count(*) AS claimed
     FROM provider_import_sources WHERE workspace_id = $1 AND resource = 'suppressions'`,
    [ws.workspaceId],
  );
  t.same(unmarked.rows[0], { made: '0', claimed: '300' }, 'no row made, no claim let go');
  await checkpoint('pim_first', first.marks);

  // Another import of the same page: the rows made are the first's; the refused ones are tried again.
  const again = await applyPage(fill('pim_again'), suppressions, emptyReport());
  t.same(again.report.suppressions, { imported: 0, existing: 297, failed: 3 });

  // Contacts: two lists, a person in both on one page (made once, then joins the second), a bad address.
  const lists: SourceItem[] = [2, 3].map((id) => ({
    resource: 'audiences',
    sourceId: String(id),
    name: `List ${id}`,
    description: null,
  }));
  const made = await applyPage(fill('pim_first'), lists, first.report);
  await checkpoint('pim_first', made.marks);
  const contacts: SourceItem[] = Array.from({ length: 260 }, (_, i) => ({
    resource: 'contacts',
    sourceId: i === 259 ? 'member0@fill.test' : i === 100 ? 'bad' : `member${i}@fill.test`,
    email: i === 259 ? 'Member0@fill.test' : i === 100 ? 'bad' : `Member${i}@fill.test`,
    name: `Member ${i}`,
    attributes: { PLAN: 'pro' },
    subscribed: i === 259 || i % 10 !== 9,
    audienceSourceIds: [i === 259 ? '3' : '2'],
  }));
  const page = await applyPage(fill('pim_first'), contacts, made.report);
  // 259 distinct addresses: 25 unsubscribed (9, 19, … 249), one refused, the rest imported.
  t.same(page.report.contacts, { imported: 233, existing: 0, failed: 1, unsubscribed: 25 });
  t.match(page.report.errors.at(-1), { resource: 'contacts', sourceId: 'bad', code: 'invalid_email_address' });
  await checkpoint('pim_first', page.marks);
  const member = (await h.request(ws.apiKey, 'GET', '/contacts/member0@fill.test')).json();
  const audiences = (await h.request(ws.apiKey, 'GET', '/audiences?limit=100')).json().data;
  const byName = new Map(audiences.map((a: { name: string; id: string }) => [a.name, a.id]));
  t.ok(
    member.audienceIds.includes(byName.get('List 2')) && member.audienceIds.includes(byName.get('List 3')),
    'the person of both lists is in both audiences',
  );
  const stored = await pool.query('SELECT count(*) AS n FROM contacts WHERE workspace_id = $1', [ws.workspaceId]);
  t.equal(Number(stored.rows[0].n), 233);
});
