import t from 'tap';
import { refusal } from '../support/refusal.ts';
import {
  decideDeleteThread,
  decideFileSent,
  decideMarkThread,
  decideMoveThread,
  decideReceiveMessage,
  decideUpdateThread,
  type ReceiveMessage,
} from '../../domain/threads/decide.ts';
import type { ThreadEvent } from '../../domain/threads/events.ts';
import { threadAggregate, type ThreadState } from '../../domain/threads/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const T = 'thr_000000000000000000000001';

const given = (events: ThreadEvent[]): ThreadState =>
  events.reduce(threadAggregate.evolve, threadAggregate.initialState);

const arrival = (headerId: string | null, spam = false, replyTo: ReceiveMessage['replyTo'] = null): ReceiveMessage => ({
  message: {
    threadId: T,
    messageId: `mes_${String(headerId).padStart(24, '0').slice(-24)}`,
    mailbox: { addressId: 'addr_1', address: 'a@example.com', domainId: 'd1', domain: 'example.com' },
    mailFrom: 'olga@outside.test',
    rcptTo: ['a@example.com'],
    client: { ip: '192.0.2.1', helo: 'mail.outside.test' },
    raw: { sha256: 'a'.repeat(64), size: 100 },
    summary: {
      messageId: headerId,
      inReplyTo: [],
      references: [],
      date: null,
      subject: 'Hello',
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
    authentication: {
      spf: { result: 'none', domain: null },
      dkim: [],
      dmarc: null,
      dmarcSkipped: null,
      arc: { result: 'none', instance: 0 },
      header: '',
    } as never,
    spam: { spam, reasons: spam ? ['dmarc_reject'] : [], score: null },
    threadedBy: 'new',
    normalisedSubject: 'hello',
    receivedAt: NOW,
  },
  replyTo,
});

t.test('a first message opens the thread in the inbox, or in spam when it is spam', async (t) => {
  t.match(decideReceiveMessage(given([]), arrival('m1')), [{ type: 'MessageReceived', data: { label: 'inbox' } }]);
  t.match(decideReceiveMessage(given([]), arrival('m1', true)), [{ type: 'MessageReceived', data: { label: 'spam' } }]);
});

t.test('the same Message-ID again files nothing; a reply to sent mail adds SentEmailReplied', async (t) => {
  const state = given(decideReceiveMessage(given([]), arrival('m1')));
  t.same(decideReceiveMessage(state, arrival('m1')), []);
  t.match(decideReceiveMessage(state, arrival('m2', false, { emailId: 'em_1' })), [
    { type: 'MessageReceived' },
    { type: 'SentEmailReplied', data: { emailId: 'em_1', threadId: T, from: 'olga@outside.test' } },
  ]);
  // Without a Message-ID, every delivery is a message of its own.
  t.equal(decideReceiveMessage(state, arrival(null)).length, 1);
});

t.test('an archived thread comes back with a new message; trash and spam stay', async (t) => {
  const opened = decideReceiveMessage(given([]), arrival('m1'));
  for (const [label, spam, expected] of [
    ['archive', false, 'inbox'],
    ['archive', true, 'archive'],
    ['trash', false, 'trash'],
    ['spam', false, 'spam'],
  ] as const) {
    const state = given([...opened, ...decideMoveThread(given(opened), { threadId: T, label, now: NOW })]);
    t.match(decideReceiveMessage(state, arrival('m2', spam)), [{ data: { label: expected } }], `${label} ${spam}`);
  }
});

const sent = (emailId: string, headerId: string) => {
  const { message } = arrival(headerId);
  const { rcptTo: _r, client: _c, authentication: _a, spam: _s, receivedAt: _t, ...rest } = message;
  return { ...rest, emailId, mailFrom: `${emailId}@bounces.example.com`, sentAt: NOW };
};

t.test('sent mail opens a thread out of the inbox, never moves or marks one, and files once', async (t) => {
  t.match(decideFileSent(given([]), sent('em_1', 's1')), [{ type: 'MessageSent', data: { label: 'archive' } }]);
  const opened = given(decideFileSent(given([]), sent('em_1', 's1')));
  t.equal(opened.unread, false, 'a thread of sent mail alone is read');
  t.same(decideFileSent(opened, sent('em_1', 's1')), [], 'the same email again files nothing');
  // A reply into the mailbox brings the conversation to the inbox; a send then leaves it there.
  const answered = given([
    ...decideFileSent(given([]), sent('em_1', 's1')),
    ...decideReceiveMessage(opened, arrival('r1')),
  ]);
  t.equal(answered.label, 'inbox');
  t.match(decideFileSent(answered, sent('em_2', 's2')), [{ data: { label: 'inbox' } }]);
  const trashed = given(
    [...decideFileSent(given([]), sent('em_1', 's1'))].concat(
      decideMoveThread(opened, { threadId: T, label: 'trash', now: NOW }),
    ),
  );
  t.match(decideFileSent(trashed, sent('em_2', 's2')), [{ data: { label: 'trash' } }], 'a send leaves the trash alone');
  // Mail the mailbox sends to itself is filed as received too: the sent copy's header is not the arrival's.
  t.equal(decideReceiveMessage(opened, arrival('s1')).length, 1);
  const deleted = given([
    ...decideFileSent(given([]), sent('em_1', 's1')),
    ...decideMoveThread(opened, { threadId: T, label: 'trash', now: NOW }),
    { type: 'ThreadDeleted', data: { threadId: T, at: NOW } },
  ]);
  t.equal(refusal(() => decideFileSent(deleted, sent('em_3', 's3'))).code, 'resource_not_found');
});

t.test('marking and moving; sent and drafts are not settable; unknown labels are not found', async (t) => {
  const state = given(decideReceiveMessage(given([]), arrival('m1')));
  t.match(decideMarkThread(state, { threadId: T, unread: false, now: NOW }), [{ type: 'ThreadMarked' }]);
  t.same(decideMarkThread(state, { threadId: T, unread: true, now: NOW }), []);
  t.match(decideMoveThread(state, { threadId: T, label: 'archive', now: NOW }), [
    { type: 'ThreadMoved', data: { from: 'inbox', to: 'archive' } },
  ]);
  t.same(decideMoveThread(state, { threadId: T, label: 'inbox', now: NOW }), []);
  for (const label of ['sent', 'drafts']) {
    const e = refusal(() => decideMoveThread(state, { threadId: T, label, now: NOW }));
    t.same([e.code, e.param], ['label_not_directly_settable', 'label']);
  }
  const e = refusal(() => decideMoveThread(state, { threadId: T, label: 'work', now: NOW }));
  t.same([e.code, e.param], ['label_not_found', 'label']);
  t.equal(
    refusal(() => decideMarkThread(given([]), { threadId: T, unread: true, now: NOW })).code,
    'resource_not_found',
  );
});

t.test('one update: labels, the move and read state together; any refusal refuses it all', async (t) => {
  const state = given(decideReceiveMessage(given([]), arrival('m1')));
  const known = new Set(['lbl_1', 'lbl_2']);
  t.match(
    decideUpdateThread(state, {
      threadId: T,
      label: 'archive',
      labels: { add: ['lbl_1'], remove: [], known },
      unread: false,
      now: NOW,
    }),
    [
      { type: 'ThreadMoved', data: { to: 'archive' } },
      { type: 'ThreadLabelsChanged', data: { added: ['lbl_1'] } },
      { type: 'ThreadMarked', data: { unread: false } },
    ],
  );
  t.same(decideUpdateThread(state, { threadId: T, label: 'inbox', unread: true, now: NOW }), [], 'nothing to change');
  const e = refusal(() =>
    decideUpdateThread(state, {
      threadId: T,
      label: 'archive',
      labels: { add: ['lbl_9'], remove: [], known },
      now: NOW,
    }),
  );
  t.same([e.code, e.param], ['label_not_found', 'addLabels.0'], 'a bad label id refuses the move with it');
  const moved = refusal(() =>
    decideUpdateThread(state, { threadId: T, label: 'sent', labels: { add: ['lbl_1'], remove: [], known }, now: NOW }),
  );
  t.same([moved.code, moved.param], ['label_not_directly_settable', 'label']);
  t.equal(
    refusal(() => decideUpdateThread(given([]), { threadId: T, unread: true, now: NOW })).code,
    'resource_not_found',
  );
});

t.test('delete: to the trash first, then for good; a deleted thread is gone', async (t) => {
  let events = decideReceiveMessage(given([]), arrival('m1'));
  const first = decideDeleteThread(given(events), { threadId: T, now: NOW });
  t.match(first, [{ type: 'ThreadMoved', data: { to: 'trash' } }]);
  events = [...events, ...first];
  const second = decideDeleteThread(given(events), { threadId: T, now: NOW });
  t.match(second, [{ type: 'ThreadDeleted' }]);
  events = [...events, ...second];
  t.equal(refusal(() => decideDeleteThread(given(events), { threadId: T, now: NOW })).code, 'resource_not_found');
  t.equal(refusal(() => decideReceiveMessage(given(events), arrival('m3'))).code, 'resource_not_found');
});
