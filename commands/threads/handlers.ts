import { mailboxOwnerOf } from '../../domain/shared/mailbox-owners.ts';
import {
  chooseThread,
  normaliseSubject,
  type ThreadChoice,
  type ThreadingKnowledge,
  threadingKeys,
  threadingMessageOf,
} from '../../domain/messages/threading.ts';
import {
  decideDeleteThread,
  decideFileSent,
  decideReceiveMessage,
  decideUpdateThread,
} from '../../domain/threads/decide.ts';
import {
  type Mailbox,
  type MessageReceivedData,
  type MessageSentData,
  type ThreadEvent,
  threadStream,
} from '../../domain/threads/events.ts';
import { threadAggregate, type ThreadState } from '../../domain/threads/state.ts';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { touchContact } from '../contacts/handlers.ts';
import { labelsOfMailbox } from '../labels/handlers.ts';
import { type Actor, type CommandContext, execute } from '../execute.ts';
import { newId } from '../ids.ts';

/** What filing a message looks up in the read models (system.ts builds it from projections/threads). */
export interface FilingLookups {
  threading(
    workspaceId: string,
    mailbox: string,
    keys: { messageId: string | null; ids: string[]; subject: string | null },
  ): Promise<ThreadingKnowledge>;
  /**
   * Threading's knowledge for an arriving message, with the sent message whose Message-ID is the
   * nearest of `replyIds` and whether `sender` is a contact: one round trip.
   */
  arrival(
    workspaceId: string,
    mailbox: string,
    keys: { messageId: string | null; ids: string[]; subject: string | null },
    replyIds: string[],
    sender: string | null,
  ): Promise<ArrivalKnowledge>;
}

export interface ArrivalKnowledge {
  threading: ThreadingKnowledge;
  replyTo: { emailId: string } | undefined;
  fromContact: boolean;
}

export type ThreadedBy = MessageReceivedData['threadedBy'];

/** A message as threading sees it (threading.ts), and what threading looks up for it. */
function threadingOf(s: MessageSummary, at: string) {
  const message = threadingMessageOf(s, at);
  const { ids, subject } = threadingKeys(message);
  return { message, keys: { messageId: s.messageId, ids, subject } };
}

/** Which thread a message joins in `mailbox`: its threading keys looked up, then the rules applied (threading.ts). */
export async function chooseThreadFor(
  lookups: Pick<FilingLookups, 'threading'>,
  workspaceId: string,
  mailbox: string,
  s: MessageSummary,
  at: string,
): Promise<ThreadChoice> {
  const { message, keys } = threadingOf(s, at);
  return chooseThread(message, await lookups.threading(workspaceId, mailbox, keys));
}

export type ArrivingMessage = Omit<
  MessageReceivedData,
  'threadId' | 'messageId' | 'mailbox' | 'threadedBy' | 'normalisedSubject' | 'label'
>;

/** What filing `message` in `mailbox` reads (`FilingLookups.arrival`), before it is filed. */
export function lookUpArrival(
  lookups: FilingLookups,
  workspaceId: string,
  mailbox: string,
  message: Pick<ArrivingMessage, 'summary' | 'receivedAt'>,
): Promise<ArrivalKnowledge> {
  const s = message.summary;
  return lookups.arrival(
    workspaceId,
    mailbox,
    threadingOf(s, message.receivedAt).keys,
    [...s.inReplyTo, ...[...s.references].reverse()],
    s.from?.address.toLowerCase() ?? null,
  );
}

/**
 * Files an arriving message in one mailbox: the thread threading picks (or a new one), a
 * `SentEmailReplied` beside it when it answers our sent mail, and the sender's contact seen.
 * `known`: what `lookUpArrival` read, when the caller looked it up beside other work.
 * Answers the thread and message ids, or null when the same message was already filed there.
 */
export async function fileMessage(
  ctx: CommandContext,
  lookups: FilingLookups,
  workspaceId: string,
  mailbox: Mailbox,
  message: ArrivingMessage,
  known?: ArrivalKnowledge,
): Promise<{ threadId: string; messageId: string } | null> {
  const actor: Actor = { workspaceId, kind: 'system', id: null };
  const s = message.summary;
  const sender = s.from?.address.toLowerCase();
  const { threading, replyTo, fromContact } =
    known ?? (await lookUpArrival(lookups, workspaceId, mailbox.address, message));
  const choice = chooseThread(threadingOf(s, message.receivedAt).message, threading);
  const messageId = newId.message();
  const filed = await fileInThread(
    ctx,
    actor,
    workspaceId,
    choice,
    (threadId, threadedBy) => (state) =>
      decideReceiveMessage(state, {
        message: {
          ...message,
          threadId,
          messageId,
          mailbox,
          threadedBy,
          normalisedSubject: normaliseSubject(s.subject),
        },
        replyTo: replyTo ?? null,
      }),
  );
  const done = filed === null ? null : { threadId: filed.threadId, messageId };
  if (done && sender && fromContact) await touchContact(ctx, actor, sender, message.receivedAt);
  return done;
}

export type SentMessage = Omit<
  MessageSentData,
  'threadId' | 'messageId' | 'mailbox' | 'threadedBy' | 'normalisedSubject' | 'label'
>;

/**
 * Files mail a mailbox sent, through the same threading as arriving mail, so the replies it gets
 * and the conversation it answers share its thread. Answers the thread, or null when the email
 * was filed there already.
 */
export async function fileSentMessage(
  ctx: CommandContext,
  lookups: Pick<FilingLookups, 'threading'>,
  workspaceId: string,
  mailbox: Mailbox,
  message: SentMessage,
): Promise<{ threadId: string; messageId: string } | null> {
  const actor: Actor = { workspaceId, kind: 'system', id: null };
  const s = message.summary;
  const messageId = newId.message();
  const filed = await fileInThread(
    ctx,
    actor,
    workspaceId,
    await chooseThreadFor(lookups, workspaceId, mailbox.address, s, message.sentAt),
    (threadId, threadedBy) => (state) =>
      decideFileSent(state, {
        ...message,
        threadId,
        messageId,
        mailbox,
        threadedBy,
        normalisedSubject: normaliseSubject(s.subject),
      }),
  );
  return filed === null ? null : { threadId: filed.threadId, messageId };
}

/**
 * Appends what `decide` makes of the thread threading chose, or of a new one; a thread deleted
 * after the read model named it is replaced by a new one (the conversation starts again).
 * Answers the thread and whether the message opened it, or null when the decision filed nothing
 * (the message was there already).
 */
export async function fileInThread(
  ctx: CommandContext,
  actor: Actor,
  workspaceId: string,
  choice: ThreadChoice,
  decide: (threadId: string, threadedBy: ThreadedBy) => (state: ThreadState) => ThreadEvent[],
): Promise<{ threadId: string; opened: boolean } | null> {
  const file = async (threadId: string, threadedBy: ThreadedBy, likelyNew = false) => {
    const { events } = await execute(
      ctx,
      actor,
      threadStream(workspaceId, threadId),
      threadAggregate,
      decide(threadId, threadedBy),
      // A new thread's stream does not exist yet: no read before the append.
      { likelyNew },
    );
    return events.length === 0 ? null : { threadId, opened: threadedBy === 'new' };
  };
  if (choice.kind === 'new') return file(newId.thread(), 'new', true);
  try {
    return await file(choice.threadId, choice.by);
  } catch (error) {
    if (!(error instanceof DomainError && error.code === 'resource_not_found')) throw error;
    return file(newId.thread(), 'new', true);
  }
}

/**
 * A thread's labels and read state changed in one append (PATCH /threads/{id}, rule actions).
 * Custom label ids are checked against the live labels of its mailbox, read from their stream, so
 * a label deleted a moment ago is refused (the read model also drops one added in the race).
 */
export async function updateThread(
  ctx: CommandContext,
  actor: Actor,
  thread: { id: string; addressId: string | null; domainId: string },
  change: { unread?: boolean; label?: string; add?: string[]; remove?: string[] },
  now: string,
) {
  const labels =
    change.add !== undefined || change.remove !== undefined
      ? {
          add: change.add ?? [],
          remove: change.remove ?? [],
          known: await labelsOfMailbox(ctx, actor.workspaceId, mailboxOwnerOf(thread)),
        }
      : undefined;
  return execute(ctx, actor, threadStream(actor.workspaceId, thread.id), threadAggregate, (s) =>
    decideUpdateThread(s, { threadId: thread.id, unread: change.unread, label: change.label, labels, now }),
  );
}

/** Trash first, then for good: answers whether the thread is gone. */
export async function deleteThread(ctx: CommandContext, actor: Actor, threadId: string, now: string) {
  const { state } = await execute(ctx, actor, threadStream(actor.workspaceId, threadId), threadAggregate, (s) =>
    decideDeleteThread(s, { threadId, now }),
  );
  return { deleted: state.deleted };
}
