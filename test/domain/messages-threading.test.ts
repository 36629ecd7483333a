import t from 'tap';
import {
  chooseThread,
  isReplySubject,
  normaliseSubject,
  type SubjectCandidate,
  type ThreadChoice,
  type ThreadingMessage,
  threadingKeys,
} from '../../domain/messages/threading.ts';

/** A mailbox as the caller would have looked it up: filed message ids and subject candidates. */
function given(
  filed: Record<string, string> = {},
  extra: { referencedBy?: string[]; bySubject?: SubjectCandidate[] } = {},
) {
  const known = {
    threadOfMessageId: new Map(Object.entries(filed)),
    referencedBy: extra.referencedBy ?? [],
    bySubject: extra.bySubject ?? [],
  };
  return {
    when(message: Partial<ThreadingMessage>, options?: { subjectWindowMs?: number }) {
      const full: ThreadingMessage = {
        messageId: null,
        inReplyTo: [],
        references: [],
        subject: 'Hello',
        from: 'bob@outside.test',
        at: '2026-11-20T12:00:00.000Z',
        ...message,
      };
      return { then: (expected: ThreadChoice) => t.same(chooseThread(full, known, options), expected) };
    },
  };
}

const candidate = (threadId: string, lastMessageAt: string, participants = ['ann@ours.test', 'bob@outside.test']) => ({
  threadId,
  lastMessageAt,
  participants,
});

t.test("given a filed parent, when a reply names it in In-Reply-To, then it joins the parent's thread", async () => {
  given({ 'p1@ours.test': 'thr_1' })
    .when({ messageId: 'r1@outside.test', inReplyTo: ['p1@ours.test'], subject: 'Re: Hello' })
    .then({ kind: 'join', threadId: 'thr_1', by: 'in-reply-to' });
});

t.test('given only the root is filed, when a deep reply lists References, then it joins by them', async () => {
  given({ 'root@ours.test': 'thr_root' })
    .when({ inReplyTo: ['missing@x'], references: ['root@ours.test', 'missing@x'] })
    .then({ kind: 'join', threadId: 'thr_root', by: 'references' });
});

t.test('given two ancestors in different threads, then the nearest ancestor (last reference) wins', async () => {
  given({ 'root@x': 'thr_old', 'parent@x': 'thr_new' })
    .when({ references: ['root@x', 'parent@x'] })
    .then({ kind: 'join', threadId: 'thr_new', by: 'references' });
});

t.test('given In-Reply-To and References disagree, then In-Reply-To wins', async () => {
  given({ 'a@x': 'thr_a', 'b@x': 'thr_b' })
    .when({ inReplyTo: ['a@x'], references: ['b@x'] })
    .then({ kind: 'join', threadId: 'thr_a', by: 'in-reply-to' });
});

t.test('given the same Message-ID is filed, then the copy joins that thread whatever else it names', async () => {
  given({ 'same@x': 'thr_same', 'other@x': 'thr_other' })
    .when({ messageId: 'same@x', inReplyTo: ['other@x'] })
    .then({ kind: 'join', threadId: 'thr_same', by: 'message-id' });
});

t.test(
  "given a reply arrived before its parent, when the parent arrives, then it joins the reply's thread",
  async () => {
    given({}, { referencedBy: ['thr_child', 'thr_later'] })
      .when({ messageId: 'parent@x', subject: 'Plans' })
      .then({ kind: 'join', threadId: 'thr_child', by: 'referenced-by' });
  },
);

t.test(
  'given a thread with the same subject, when a reply-prefixed message from a participant comes within the window, then it joins by subject',
  async () => {
    given({}, { bySubject: [candidate('thr_s', '2026-11-18T12:00:00.000Z')] })
      .when({ subject: 'AW: [team] Re: hello ', from: 'Bob@Outside.test' })
      .then({ kind: 'join', threadId: 'thr_s', by: 'subject' });
  },
);

t.test(
  'given a reply whose references matched nothing, then the subject fallback still applies without a prefix',
  async () => {
    given({}, { bySubject: [candidate('thr_s', '2026-11-19T12:00:00.000Z')] })
      .when({ subject: 'Hello', inReplyTo: ['lost@elsewhere'] })
      .then({ kind: 'join', threadId: 'thr_s', by: 'subject' });
  },
);

t.test('given the same subject, when the message claims no conversation, then a new thread starts', async () => {
  given({}, { bySubject: [candidate('thr_s', '2026-11-19T12:00:00.000Z')] })
    .when({ subject: 'Hello' })
    .then({ kind: 'new' });
});

t.test('given the same subject, when the sender never took part, then a new thread starts', async () => {
  given({}, { bySubject: [candidate('thr_s', '2026-11-19T12:00:00.000Z')] })
    .when({ subject: 'Re: Hello', from: 'stranger@elsewhere.test' })
    .then({ kind: 'new' });
});

t.test('given the same subject, when the thread is older than the window, then a new thread starts', async () => {
  given({}, { bySubject: [candidate('thr_s', '2026-11-12T11:59:59.999Z')] })
    .when({ subject: 'Re: Hello' })
    .then({ kind: 'new' });
  given({}, { bySubject: [candidate('thr_s', '2026-11-13T12:00:00.000Z')] })
    .when({ subject: 'Re: Hello' })
    .then({ kind: 'join', threadId: 'thr_s', by: 'subject' });
});

t.test('the window is a parameter and counts both ways (a message filed late)', async () => {
  given({}, { bySubject: [candidate('thr_s', '2026-11-20T13:00:00.000Z')] })
    .when({ subject: 'Re: Hello' }, { subjectWindowMs: 2 * 3600_000 })
    .then({ kind: 'join', threadId: 'thr_s', by: 'subject' });
  given({}, { bySubject: [candidate('thr_s', '2026-11-20T15:00:00.000Z')] })
    .when({ subject: 'Re: Hello' }, { subjectWindowMs: 2 * 3600_000 })
    .then({ kind: 'new' });
});

t.test('given several subject candidates, then the one with the latest message wins', async () => {
  given(
    {},
    {
      bySubject: [candidate('thr_a', '2026-11-15T12:00:00.000Z'), candidate('thr_b', '2026-11-19T12:00:00.000Z')],
    },
  )
    .when({ subject: 'Fwd: Hello' })
    .then({ kind: 'join', threadId: 'thr_b', by: 'subject' });
});

t.test('an empty subject, once prefixes are off, never threads by subject', async () => {
  given({}, { bySubject: [candidate('thr_s', '2026-11-20T12:00:00.000Z')] })
    .when({ subject: 'Re: ' })
    .then({ kind: 'new' });
});

t.test('normaliseSubject and isReplySubject', async (t) => {
  t.equal(normaliseSubject('Re: RE: Fwd:  Quarterly   numbers'), 'quarterly numbers');
  t.equal(normaliseSubject('AW: WG: Angebot'), 'angebot');
  t.equal(normaliseSubject('[dev-list] Re: [dev-list] Build broken'), 'build broken');
  t.equal(normaliseSubject('Re[2]: Re(3): SV: VS: ODP: TR: RIF: Antw: Plan'), 'plan');
  t.equal(normaliseSubject('Re： 会議'), '会議', 'a full-width colon');
  t.equal(normaliseSubject('Meeting notes (fwd)'), 'meeting notes');
  t.equal(normaliseSubject('Regarding: the plan'), 'regarding: the plan', 'a word that starts like a prefix is kept');
  t.equal(normaliseSubject('Return policy'), 'return policy');
  t.ok(isReplySubject('[list] Re: x'));
  t.ok(isReplySubject('Fwd: x'));
  t.notOk(isReplySubject('Report: x'));
  t.notOk(isReplySubject('Hello'));
});

t.test('threadingKeys names what to look up: own id, parents, references nearest first, the subject', async (t) => {
  t.same(
    threadingKeys({
      messageId: 'm@x',
      inReplyTo: ['p@x'],
      references: ['root@x', 'p@x'],
      subject: 'Re: Plans',
      from: 'a@x',
      at: '2026-11-20T12:00:00.000Z',
    }),
    { ids: ['m@x', 'p@x', 'root@x'], subject: 'plans' },
  );
  t.same(threadingKeys({ messageId: null, inReplyTo: [], references: [], subject: 'Re:', from: null, at: '' }), {
    ids: [],
    subject: null,
  });
});
