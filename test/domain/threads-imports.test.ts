import t from 'tap';
import { refusal } from '../support/refusal.ts';
import { decideImportMessage, labelOnImport } from '../../domain/threads/decide.ts';
import type { MessageImportedData, ThreadEvent } from '../../domain/threads/events.ts';
import { threadAggregate, type ThreadState } from '../../domain/threads/state.ts';

const T = 'thr_000000000000000000000001';

const given = (events: ThreadEvent[]): ThreadState =>
  events.reduce(threadAggregate.evolve, threadAggregate.initialState);

const imported = (
  headerId: string | null,
  key: string,
  wanted: 'inbox' | 'archive' | 'spam' | 'trash' = 'inbox',
  unread = true,
): Omit<MessageImportedData, 'label'> & { wanted: typeof wanted } => ({
  threadId: T,
  messageId: `mes_${key.padStart(24, '0').slice(-24)}`,
  mailbox: { addressId: 'addr_1', address: 'a@example.com', domainId: 'd1', domain: 'example.com' },
  importId: 'imp_000000000000000000000001',
  importKey: key,
  direction: 'received',
  raw: { sha256: 'a'.repeat(64), size: 100 },
  summary: {
    messageId: headerId,
    inReplyTo: [],
    references: [],
    date: null,
    subject: 'Old',
    from: { name: null, address: 'olga@outside.test' },
    replyTo: [],
    to: [],
    cc: [],
    bcc: [],
    headers: [],
    headersTruncated: false,
    snippet: '',
    attachments: [],
    size: 100,
  },
  threadedBy: 'new',
  normalisedSubject: 'old',
  unread,
  at: '2020-01-01T00:00:00.000Z',
  wanted,
});

const filed = (cmd: ReturnType<typeof imported>): ThreadEvent[] => decideImportMessage(given([]), cmd);

t.test('a new thread is filed where the import put the message, read state as the import said', async (t) => {
  const [event] = filed(imported('m1@x', 'k1', 'archive', false));
  t.match(event, { type: 'MessageImported', data: { label: 'archive', unread: false, importKey: 'k1' } });
  t.notOk('wanted' in event!.data, 'the wish is not stored');
  const state = given([event!]);
  t.equal(state.unread, false);
  t.ok(state.importKeys.has('k1') && state.headerIds.has('m1@x'));
});

t.test('given an import key or a Message-ID filed, the same message again files nothing', async (t) => {
  const history = filed(imported('m1@x', 'k1'));
  t.same(decideImportMessage(given(history), imported('m1@x', 'k1')), [], 'a resumed import');
  t.same(decideImportMessage(given(history), imported('m1@x', 'other-bytes')), [], 'the Message-ID is there');
  const noId = filed(imported(null, 'k2'));
  t.same(decideImportMessage(given(noId), imported(null, 'k2')), [], 'no Message-ID: the key alone');
  t.equal(decideImportMessage(given(noId), imported(null, 'k3')).length, 1, 'other bytes: another message');
});

t.test('an existing thread: inbox mail brings an archived one back, nothing moves it to spam or trash', async (t) => {
  const archived = given(filed(imported('m1@x', 'k1', 'archive', false)));
  t.equal(labelOnImport(archived, 'inbox'), 'inbox');
  t.equal(labelOnImport(archived, 'trash'), 'archive');
  const inbox = given(filed(imported('m1@x', 'k1', 'inbox')));
  t.equal(labelOnImport(inbox, 'spam'), 'inbox');
  t.equal(labelOnImport(inbox, 'archive'), 'inbox');
  const [more] = decideImportMessage(archived, imported('m2@x', 'k2', 'archive', true));
  t.equal(
    given([...filed(imported('m1@x', 'k1', 'archive', false)), more!]).unread,
    true,
    'unread mail makes it unread',
  );
});

t.test('a deleted thread takes no more mail', async (t) => {
  const history: ThreadEvent[] = [
    ...filed(imported('m1@x', 'k1', 'trash')),
    { type: 'ThreadDeleted', data: { threadId: T, at: '2026-01-01T00:00:00.000Z' } },
  ];
  t.equal(refusal(() => decideImportMessage(given(history), imported('m2@x', 'k2'))).code, 'resource_not_found');
});
