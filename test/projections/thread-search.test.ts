import pg from 'pg';
import t from 'tap';
import { freshDatabase } from '../support/database.ts';

/**
 * `public.thread_search` (projections/threads/projector.ts), which the threads projector's filing
 * sets a thread's search with: its messages' words, then the bodies of its latest messages; when
 * those bodies would overflow a tsvector's 1 MB, the words alone, for that thread only, rather
 * than an error that fails the projector's batch for ever.
 */
t.test('a thread search keeps its bodies, or its words alone when the bodies overflow a tsvector', async (t) => {
  const db = new pg.Client({ connectionString: await freshDatabase(t) });
  await db.connect();
  t.teardown(() => db.end());
  const message = (thread: string, n: number, sha256: string) =>
    db.query(
      `INSERT INTO thread_messages (workspace_id, id, thread_id, address, direction, in_reply_to, refs, subject,
         summary, raw_sha256, raw_size, mail_from, received_at, position, search_words)
       VALUES ('ws_search', $1, $2, 'box@search.test', 'received', '{}', '{}', 'Subject', '{}', $3, 100,
         'sender@search.test', now(), $4, 'subject')`,
      [`${thread}_${n}`, thread, sha256, n],
    );
  // A body of `count` distinct words starting with `prefix`: 60,000 of them are about 0.8 MB of tsvector.
  const body = (sha256: string, prefix: string, count: number) =>
    db.query(
      `INSERT INTO message_texts (sha256, search)
       SELECT $1, to_tsvector('simple', string_agg($2 || g, ' ')) FROM generate_series(1, $3::int) g`,
      [sha256, prefix, count],
    );
  const search = async (thread: string) =>
    (
      await db.query<{ lexemes: string[] }>(
        `SELECT tsvector_to_array(public.thread_search($1, 'subject sender', 1000000000)) AS lexemes`,
        [thread],
      )
    ).rows[0]!.lexemes;

  await body('small1', 'alpha', 3);
  await body('small2', 'beta', 2);
  await message('th_small', 1, 'small1');
  await message('th_small', 2, 'small2');
  t.same(
    (await search('th_small')).sort(),
    ['alpha1', 'alpha2', 'alpha3', 'beta1', 'beta2', 'sender', 'subject'],
    'the words and both bodies',
  );

  await body('big1', 'a', 60_000);
  await body('big2', 'b', 60_000);
  await message('th_big', 1, 'big1');
  await message('th_big', 2, 'big2');
  t.same((await search('th_big')).sort(), ['sender', 'subject'], 'two bodies past 1 MB together: the words alone');
  const { rows } = await db.query(
    `SELECT v.id, array_length(tsvector_to_array(public.thread_search(v.id, 'subject sender', 1000000000)), 1) AS n
     FROM (VALUES ('th_small'), ('th_big')) AS v(id) ORDER BY v.id`,
  );
  t.same(
    rows,
    [
      { id: 'th_big', n: 2 },
      { id: 'th_small', n: 7 },
    ],
    'in one statement, only the thread that overflows loses its bodies',
  );
});
