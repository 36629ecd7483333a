import { participantsOf, type MessageSummary } from './summary.ts';
import { normaliseSubject, type SubjectCandidate, type ThreadingKnowledge } from './threading.ts';

interface PendingThread {
  /** The thread's normalised subject when this batch opened it; one the read models hold keeps theirs. */
  subject: string | null;
  lastAt: number;
  participants: Set<string>;
}

/**
 * What a batch of filings that do not wait for the read models has filed (commands/execute.ts
 * `deferredWrites`): a mailbox import files a conversation's messages one after another, each
 * joining the thread the one before opened, and a wait for the threads read model after every
 * message held an import to about 20 messages a second (docs/benchmarks.md). `knowledge` merges
 * it into what the read models answered, as they will answer once they have it; the batch waits
 * for them at its end and starts the next with a new one.
 */
export class PendingThreading {
  private readonly threadOfHeader = new Map<string, string>();
  /** Per header id, the threads of messages naming it in In-Reply-To or References, in filing order. */
  private readonly namedBy = new Map<string, { threadId: string; at: number }[]>();
  private readonly threads = new Map<string, PendingThread>();

  /** `known`, the read models' answer for `keys` in the mailbox, with what the batch filed there. */
  knowledge(
    workspaceId: string,
    mailbox: string,
    keys: { messageId: string | null; ids: string[]; subject: string | null },
    known: ThreadingKnowledge,
  ): ThreadingKnowledge {
    const box = `${workspaceId} ${mailbox} `;
    const threadOfMessageId = new Map(known.threadOfMessageId);
    for (const id of keys.ids) {
      const pending = this.threadOfHeader.get(box + id);
      // The read models hold the messages filed before the batch: the earliest with the id wins.
      if (pending !== undefined && !threadOfMessageId.has(id)) threadOfMessageId.set(id, pending);
    }
    const namedBy = keys.messageId === null ? [] : (this.namedBy.get(box + keys.messageId) ?? []);
    const referencedBy = [...known.referencedBy, ...[...namedBy].sort((a, b) => a.at - b.at).map((r) => r.threadId)];
    return { threadOfMessageId, referencedBy, bySubject: this.subjectCandidates(box, keys.subject, known.bySubject) };
  }

  private subjectCandidates(
    box: string,
    subject: string | null,
    known: readonly SubjectCandidate[],
  ): SubjectCandidate[] {
    if (subject === null) return [...known];
    const merged = known.map((candidate) => {
      const pending = this.threads.get(box + candidate.threadId);
      if (!pending) return candidate;
      return {
        threadId: candidate.threadId,
        lastMessageAt: new Date(Math.max(Date.parse(candidate.lastMessageAt), pending.lastAt)).toISOString(),
        participants: [...new Set([...candidate.participants, ...pending.participants])],
      };
    });
    const listed = new Set(known.map((c) => c.threadId));
    for (const [key, pending] of this.threads) {
      const threadId = key.slice(box.length);
      if (!key.startsWith(box) || pending.subject !== subject || listed.has(threadId)) continue;
      merged.push({
        threadId,
        lastMessageAt: new Date(pending.lastAt).toISOString(),
        participants: [...pending.participants],
      });
    }
    return merged;
  }

  /** What the batch filed: the message's ids, the ids it names, and its thread's subject, time and people. */
  filed(
    workspaceId: string,
    mailbox: string,
    message: { summary: MessageSummary; at: string },
    thread: { threadId: string; opened: boolean },
  ): void {
    const box = `${workspaceId} ${mailbox} `;
    const { summary: s } = message;
    const at = Date.parse(message.at);
    if (s.messageId !== null && !this.threadOfHeader.has(box + s.messageId))
      this.threadOfHeader.set(box + s.messageId, thread.threadId);
    for (const id of new Set([...s.inReplyTo, ...s.references])) {
      const list = this.namedBy.get(box + id) ?? [];
      list.push({ threadId: thread.threadId, at });
      this.namedBy.set(box + id, list);
    }
    const key = box + thread.threadId;
    const pending = this.threads.get(key);
    if (pending) {
      pending.lastAt = Math.max(pending.lastAt, at);
      for (const p of participantsOf(s)) pending.participants.add(p);
      return;
    }
    const subject = normaliseSubject(s.subject);
    this.threads.set(key, {
      subject: thread.opened && subject !== '' ? subject : null,
      lastAt: at,
      participants: new Set(participantsOf(s)),
    });
  }
}
