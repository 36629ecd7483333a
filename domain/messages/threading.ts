import type { MessageSummary } from './summary.ts';

/**
 * Which thread a message joins, as a pure function over what the caller looked up. Threads are
 * per mailbox: every lookup is scoped to the mailbox the message is filed in. Arriving mail,
 * sent mail and imported mail all go through the same function, so a reply to sent mail lands
 * in the thread the sent message opened.
 *
 * The algorithm, in order; the first rule that finds a thread wins:
 *
 * 1. `message-id`: a message with the same Message-ID is already in a thread (the same message
 *    delivered twice, or our own sent copy of it): that thread.
 * 2. `in-reply-to`: a message named by In-Reply-To is in a thread.
 * 3. `references`: a message named by References is, nearest ancestor first (the list is read
 *    from its end: the last id is the parent, the first the root).
 * 4. `referenced-by`: a message already filed names this one in its In-Reply-To or References
 *    (a reply that arrived before its parent): the thread of the earliest such message.
 * 5. `subject`: only for a message that claims to be part of a conversation (a reply or forward
 *    prefix such as `Re:`, `AW:`, `Fwd:`, or In-Reply-To/References that matched nothing) and has
 *    a subject left once prefixes and list tags are taken off. It joins the thread with the same
 *    normalised subject whose last message is within `subjectWindowMs` (7 days by default) of
 *    this one, before or after, and whose participants include this message's sender; of
 *    several, the one with the latest message.
 * 6. Otherwise a new thread.
 *
 * Threads are never merged: when a message's ids point at two threads, the rule order above
 * picks one and the other stays as it is.
 */

export interface ThreadingMessage {
  /** Ids as the summary keeps them, without angle brackets. */
  messageId: string | null;
  inReplyTo: readonly string[];
  references: readonly string[];
  subject: string;
  /** The sender's address (From). */
  from: string | null;
  /** When the message arrived or was sent (ISO); not the Date header, which the sender writes. */
  at: string;
}

/** A message as threading sees it, from its summary. */
export const threadingMessageOf = (s: MessageSummary, at: string): ThreadingMessage => ({
  messageId: s.messageId,
  inReplyTo: s.inReplyTo,
  references: s.references,
  subject: s.subject,
  from: s.from?.address ?? null,
  at,
});

export interface SubjectCandidate {
  threadId: string;
  /** ISO time of the thread's latest message. */
  lastMessageAt: string;
  /** Every address that sent or received a message of the thread. */
  participants: readonly string[];
}

/** What the caller found in the mailbox for the keys `threadingKeys` named. */
export interface ThreadingKnowledge {
  /** Thread of the filed message with that Message-ID, for each id found. */
  threadOfMessageId: ReadonlyMap<string, string>;
  /** Threads of filed messages that name this message's id, earliest message first. */
  referencedBy: readonly string[];
  /** Threads whose normalised subject equals this message's. */
  bySubject: readonly SubjectCandidate[];
}

export type ThreadChoice =
  | {
      kind: 'join';
      threadId: string;
      by: 'message-id' | 'in-reply-to' | 'references' | 'referenced-by' | 'subject';
    }
  | { kind: 'new' };

export const DEFAULT_SUBJECT_WINDOW_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Reply and forward prefixes in the languages mail clients write them in: English, German
 * (AW, WG), Nordic (SV, VS, VB, FS), Dutch (Antw), French (TR), Italian (R, RIF), Spanish and
 * Portuguese (RE, RES, ENC), Polish (ODP), Finnish (VS), with an optional count (`Re[2]:`, `Re(2):`)
 * and a full-width colon.
 */
const PREFIX = /^(?:re|fwd?|aw|wg|sv|vs|vb|fs|antw|tr|rif|r|res|enc|odp)\s*(?:\[\d+\]|\(\d+\))?\s*[:：]\s*/i;
/** A mailing list's tag, `[project-dev]`, short and on one line. */
const LIST_TAG = /^\[[^\]\r\n]{1,40}\]\s*/;
const FORWARD_SUFFIX = /\s*\((?:fwd|fw)\)\s*$/i;

/** The subject as threads compare it: prefixes and list tags off, spaces collapsed, lower case. */
export function normaliseSubject(subject: string): string {
  let rest = subject.replace(/\s+/g, ' ').trim();
  for (;;) {
    const next = rest.replace(PREFIX, '').replace(LIST_TAG, '').replace(FORWARD_SUFFIX, '').trim();
    if (next === rest) break;
    rest = next;
  }
  return rest.toLowerCase();
}

/** Whether the subject says the message answers or passes on another (a prefix, list tag aside). */
export function isReplySubject(subject: string): boolean {
  let rest = subject.trim();
  while (LIST_TAG.test(rest)) rest = rest.replace(LIST_TAG, '');
  return PREFIX.test(rest) || FORWARD_SUFFIX.test(rest);
}

/** What the caller has to look up before `chooseThread`: these ids, and this subject. */
export function threadingKeys(message: ThreadingMessage): { ids: string[]; subject: string | null } {
  const ids = [
    ...(message.messageId ? [message.messageId] : []),
    ...message.inReplyTo,
    ...[...message.references].reverse(),
  ];
  const subject = normaliseSubject(message.subject);
  return { ids: [...new Set(ids)], subject: subject === '' ? null : subject };
}

export function chooseThread(
  message: ThreadingMessage,
  known: ThreadingKnowledge,
  options: { subjectWindowMs?: number } = {},
): ThreadChoice {
  const thread = (id: string | null) => (id === null ? undefined : known.threadOfMessageId.get(id));

  const same = thread(message.messageId);
  if (same) return { kind: 'join', threadId: same, by: 'message-id' };
  for (const id of message.inReplyTo) {
    const found = thread(id);
    if (found) return { kind: 'join', threadId: found, by: 'in-reply-to' };
  }
  for (const id of [...message.references].reverse()) {
    const found = thread(id);
    if (found) return { kind: 'join', threadId: found, by: 'references' };
  }
  if (message.messageId && known.referencedBy.length > 0)
    return { kind: 'join', threadId: known.referencedBy[0]!, by: 'referenced-by' };

  const subject = normaliseSubject(message.subject);
  const claimsConversation =
    isReplySubject(message.subject) || message.inReplyTo.length > 0 || message.references.length > 0;
  const sender = message.from?.toLowerCase();
  if (subject === '' || !claimsConversation || !sender) return { kind: 'new' };
  const window = options.subjectWindowMs ?? DEFAULT_SUBJECT_WINDOW_MS;
  const at = Date.parse(message.at);
  const candidates = known.bySubject
    .filter((c) => Math.abs(Date.parse(c.lastMessageAt) - at) <= window)
    .filter((c) => c.participants.some((p) => p.toLowerCase() === sender))
    .sort((a, b) => Date.parse(b.lastMessageAt) - Date.parse(a.lastMessageAt));
  const best = candidates[0];
  return best ? { kind: 'join', threadId: best.threadId, by: 'subject' } : { kind: 'new' };
}
