import { createHash } from 'node:crypto';
import t from 'tap';
import { fileMessage } from '../../commands/threads/handlers.ts';
import { PostgresTextIndex } from '../../infra/search/postgres.ts';
import { mailboxLookups } from '../../system.ts';
import { startSendingApp } from '../support/emails.ts';
import { arrivingMessage } from '../support/inbound.ts';

/**
 * Search past its first step: `q` first tests the latest 500 threads one by one, and only when
 * they hold too few matches looks the matches up through the indexes (projections/threads/queries.ts
 * `listThreads`). Here the matches are older than the latest 500, so only the second step finds them.
 * Mail is filed as the receiving slice files it, with body texts in the text index.
 */
const { h, setUp } = await startSendingApp(t);
const { ws, domain, a } = await setUp('search.example.com');
const box = { addressId: a.id, address: a.address, domainId: domain.id, domain: domain.domain };
const texts = new PostgresTextIndex(h.system.database.pool);
const lookups = mailboxLookups(h.system.readDb);

const start = Date.parse('2026-01-01T00:00:00Z');
const file = async (i: number, subject: string, body: string) => {
  const sha256 = createHash('sha256').update(`message ${i}`).digest('hex');
  await texts.put(sha256, body);
  await fileMessage(h.system.commands, lookups, ws.workspaceId, box, {
    ...arrivingMessage(`s${i}@outside.test`, { subject }),
    raw: { sha256, size: 100 },
    receivedAt: new Date(start + i * 60_000).toISOString(),
  });
};
// Oldest first: 3 threads with the subject word, 2 with the body word, then 500 with neither.
const old = [
  ...[0, 1, 2].map((i) => file(i, `Zebra crossing ${i}`, 'Nothing to see.')),
  ...[3, 4].map((i) => file(i, `Notes ${i}`, 'The okapi is in the body only.')),
];
await Promise.all(old);
for (let i = 5; i < 505; i += 25)
  await Promise.all(Array.from({ length: 25 }, (_, k) => file(i + k, `Weekly notes ${i + k}`, 'Nothing here.')));

const ids = async (q: string, limit = 10) => {
  const res = await h.request(ws.apiKey, 'GET', `/threads?q=${encodeURIComponent(q)}&limit=${limit}`);
  t.equal(res.statusCode, 200, res.body);
  return res.json().data.map((x: { subject: string }) => x.subject);
};

t.test('matches older than the latest 500 threads are found through the indexes', async (t) => {
  t.same(await ids('zebra'), ['Zebra crossing 2', 'Zebra crossing 1', 'Zebra crossing 0'], 'subject, newest first');
  t.same(await ids('okapi'), ['Notes 4', 'Notes 3'], 'body text');
  t.same(await ids('zebra or okapi', 4), ['Notes 4', 'Notes 3', 'Zebra crossing 2', 'Zebra crossing 1']);
  t.same(await ids('quagga'), [], 'no match anywhere');
});

t.test('a word in every thread fills its page from the latest ones, and pages on', async (t) => {
  const first = await h.request(ws.apiKey, 'GET', '/threads?q=notes&limit=3');
  t.same(
    first.json().data.map((x: { subject: string }) => x.subject),
    ['Weekly notes 504', 'Weekly notes 503', 'Weekly notes 502'],
  );
  const next = await h.request(
    ws.apiKey,
    'GET',
    `/threads?q=notes&limit=3&cursor=${encodeURIComponent(first.json().nextCursor)}`,
  );
  t.same(
    next.json().data.map((x: { subject: string }) => x.subject),
    ['Weekly notes 501', 'Weekly notes 500', 'Weekly notes 499'],
  );
});

t.test('a thread whose bodies pass what a tsvector holds keeps its own words and stays searchable', async (t) => {
  // Long words that differ only at their end: under the bytes the thread keeps once compressed,
  // well past PostgreSQL's 1 MB for a tsvector once concatenated.
  const body = (n: number) =>
    Array.from({ length: 15_000 }, (_, i) => `verylongcommonprefixforcompression${n}x${i}`).join(' ');
  const first = createHash('sha256').update('big 1').digest('hex');
  const second = createHash('sha256').update('big 2').digest('hex');
  await texts.put(first, body(1));
  await texts.put(second, body(2));
  const filed = await fileMessage(h.system.commands, lookups, ws.workspaceId, box, {
    ...arrivingMessage('big1@outside.test', { subject: 'Capybara report' }),
    raw: { sha256: first, size: 100 },
  });
  await fileMessage(h.system.commands, lookups, ws.workspaceId, box, {
    ...arrivingMessage('big2@outside.test', { subject: 'Re: Capybara report', inReplyTo: ['big1@outside.test'] }),
    raw: { sha256: second, size: 100 },
  });
  const thread = (await h.request(ws.apiKey, 'GET', `/threads/${filed!.threadId}`)).json();
  t.equal(thread.messageCount, 2, 'both filed: the projector did not stop');
  const { rows } = await h.system.database.pool.query('SELECT length(search) AS n FROM threads WHERE id = $1', [
    filed!.threadId,
  ]);
  t.ok(rows[0].n < 100, `its search keeps its subject and participants alone (${rows[0].n} words)`);
  t.same(await ids('capybara'), ['Capybara report']);
});
