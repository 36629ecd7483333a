import t from 'tap';
import { PendingThreading } from '../../domain/messages/pending-threading.ts';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import {
  chooseThread,
  type ThreadingKnowledge,
  threadingKeys,
  threadingMessageOf,
} from '../../domain/messages/threading.ts';

/**
 * A batch's filings merged into the read models' answers: given what the read models hold and
 * what the batch filed, a message is threaded as it would be once the read models hold it all.
 */
const WS = 'ws_1';
const BOX = 'ann@ours.test';

const summary = (m: Partial<MessageSummary> & { messageId: string | null }): MessageSummary => ({
  headersTruncated: false,
  size: 100,
  subject: 'Plans',
  from: { name: null, address: 'Bob@Outside.test' },
  to: [{ name: null, address: BOX }],
  cc: [],
  bcc: [],
  replyTo: [],
  date: null,
  inReplyTo: [],
  references: [],
  headers: [],
  snippet: '',
  attachments: [],
  ...m,
});

const nothing: ThreadingKnowledge = { threadOfMessageId: new Map(), referencedBy: [], bySubject: [] };

function choose(pending: PendingThreading, s: MessageSummary, known = nothing, at = '2026-11-20T12:00:00.000Z') {
  const message = threadingMessageOf(s, at);
  const keys = threadingKeys(message);
  return chooseThread(
    message,
    pending.knowledge(WS, BOX, { messageId: s.messageId, ids: keys.ids, subject: keys.subject }, known),
  );
}

t.test('a reply joins the thread its parent opened in the batch', async (t) => {
  const pending = new PendingThreading();
  pending.filed(
    WS,
    BOX,
    { summary: summary({ messageId: 'p1' }), at: '2026-11-20T10:00:00Z' },
    {
      threadId: 'thr_a',
      opened: true,
    },
  );
  t.same(choose(pending, summary({ messageId: 'p2', subject: 'Re: Plans', inReplyTo: ['p1'] })), {
    kind: 'join',
    threadId: 'thr_a',
    by: 'in-reply-to',
  });
  t.same(choose(pending, summary({ messageId: 'p2', references: ['x', 'p1'] })), {
    kind: 'join',
    threadId: 'thr_a',
    by: 'references',
  });
});

t.test('a parent filed after its reply joins the reply thread (referenced-by), earliest first', async (t) => {
  const pending = new PendingThreading();
  pending.filed(
    WS,
    BOX,
    { summary: summary({ messageId: 'r2', inReplyTo: ['p1'] }), at: '2026-11-20T11:00:00Z' },
    {
      threadId: 'thr_late',
      opened: true,
    },
  );
  pending.filed(
    WS,
    BOX,
    { summary: summary({ messageId: 'r1', references: ['p1'] }), at: '2026-11-20T10:00:00Z' },
    {
      threadId: 'thr_early',
      opened: true,
    },
  );
  t.same(choose(pending, summary({ messageId: 'p1' })), { kind: 'join', threadId: 'thr_early', by: 'referenced-by' });
  const known = { ...nothing, referencedBy: ['thr_stored'] };
  t.same(
    choose(pending, summary({ messageId: 'p1' }), known),
    { kind: 'join', threadId: 'thr_stored', by: 'referenced-by' },
    'the read models hold what was filed before the batch',
  );
});

t.test('the read models answer first for an id both know', async (t) => {
  const pending = new PendingThreading();
  pending.filed(
    WS,
    BOX,
    { summary: summary({ messageId: 'p1' }), at: '2026-11-20T10:00:00Z' },
    {
      threadId: 'thr_batch',
      opened: true,
    },
  );
  const known = { ...nothing, threadOfMessageId: new Map([['p1', 'thr_stored']]) };
  t.same(choose(pending, summary({ messageId: 'p1' }), known), {
    kind: 'join',
    threadId: 'thr_stored',
    by: 'message-id',
  });
});

t.test('a subject-only reply joins a thread the batch opened, with its sender among the people', async (t) => {
  const pending = new PendingThreading();
  pending.filed(
    WS,
    BOX,
    { summary: summary({ messageId: 'p1', subject: 'Plans' }), at: '2026-11-20T10:00:00Z' },
    {
      threadId: 'thr_a',
      opened: true,
    },
  );
  t.same(choose(pending, summary({ messageId: 'p9', subject: 'RE: plans' })), {
    kind: 'join',
    threadId: 'thr_a',
    by: 'subject',
  });
  const stranger = summary({ messageId: 'p9', subject: 'Re: Plans', from: { name: null, address: 'eve@else.test' } });
  t.same(choose(pending, stranger), { kind: 'new' }, 'a sender who is no participant starts a new thread');
  t.same(
    choose(pending, summary({ messageId: 'p9', subject: 'Re: Plans' }), nothing, '2026-12-20T12:00:00.000Z'),
    { kind: 'new' },
    'outside the subject window',
  );
});

t.test('a message joining a stored thread adds its time and people to that thread only', async (t) => {
  const pending = new PendingThreading();
  pending.filed(
    WS,
    BOX,
    {
      summary: summary({
        messageId: 'j1',
        subject: 'Re: Other words',
        from: { name: null, address: 'carl@else.test' },
      }),
      at: '2026-11-20T10:00:00Z',
    },
    { threadId: 'thr_stored', opened: false },
  );
  const stored = { threadId: 'thr_stored', lastMessageAt: '2026-10-01T00:00:00.000Z', participants: [BOX] };
  const known = { ...nothing, bySubject: [stored] };
  const carl = summary({ messageId: 'j2', subject: 'Re: Plans', from: { name: null, address: 'carl@else.test' } });
  t.same(choose(pending, carl, known), { kind: 'join', threadId: 'thr_stored', by: 'subject' }, 'carl and the time');
  t.same(choose(pending, carl), { kind: 'new' }, 'a joined thread keeps the subject the read models give it');
});

t.test('other mailboxes and workspaces do not see the batch', async (t) => {
  const pending = new PendingThreading();
  pending.filed(
    WS,
    'bob@ours.test',
    { summary: summary({ messageId: 'p1' }), at: '2026-11-20T10:00:00Z' },
    {
      threadId: 'thr_bob',
      opened: true,
    },
  );
  pending.filed(
    'ws_2',
    BOX,
    { summary: summary({ messageId: 'p1' }), at: '2026-11-20T10:00:00Z' },
    {
      threadId: 'thr_other',
      opened: true,
    },
  );
  t.same(choose(pending, summary({ messageId: 'p2', subject: 'Re: Plans', inReplyTo: ['p1'] })), { kind: 'new' });
});
