import { fail } from '../shared/errors.ts';
import {
  isSettableLabel,
  isSystemLabel,
  type MessageReceivedData,
  type MessageImportedData,
  type MessageSentData,
  type SettableLabel,
  type ThreadEvent,
} from './events.ts';
import type { ThreadState } from './state.ts';

const notFound = (): never => fail('resource_not_found', 'No such thread.', 'id');

/**
 * Where a thread stands once a message arrives: a new thread in `spam` or `inbox` by the message's
 * verdict; an archived thread comes back to the inbox with a message that is not spam (the
 * conversation goes on); a thread in spam or trash stays where its owner put it.
 */
export function labelOnArrival(state: ThreadState, spam: boolean): SettableLabel {
  if (!state.exists) return spam ? 'spam' : 'inbox';
  return state.label === 'archive' && !spam ? 'inbox' : state.label;
}

export interface ReceiveMessage {
  message: Omit<MessageReceivedData, 'label'>;
  /** The sent message this one answers, when its In-Reply-To or References name one of ours. */
  replyTo: { emailId: string } | null;
}

/**
 * Files an arriving message in its thread. The same Message-ID already filed here (a sender
 * repeating a delivery whose 250 it lost) files nothing; a deleted thread takes no more mail (the
 * caller opens a new one).
 */
export function decideReceiveMessage(state: ThreadState, cmd: ReceiveMessage): ThreadEvent[] {
  const { message } = cmd;
  const headerId = message.summary.messageId;
  if (state.deleted) return fail('resource_not_found', 'The thread was deleted.', 'threadId');
  if (headerId && state.headerIds.has(headerId)) return [];
  const events: ThreadEvent[] = [
    { type: 'MessageReceived', data: { ...message, label: labelOnArrival(state, message.spam.spam) } },
  ];
  if (cmd.replyTo)
    events.push({
      type: 'SentEmailReplied',
      data: {
        threadId: message.threadId,
        messageId: message.messageId,
        emailId: cmd.replyTo.emailId,
        mailbox: message.mailbox,
        from: message.summary.from?.address ?? null,
        subject: message.summary.subject,
        receivedAt: message.receivedAt,
      },
    });
  return events;
}

/**
 * Files mail the mailbox sent in its thread. A thread the send opens is out of the inbox
 * (`archive`, with `sent` following from the message); a send never moves a thread or marks it
 * read. The same email filed again (the filing process retried) files nothing; a deleted thread
 * takes no more mail, as for arrivals.
 */
export function decideFileSent(state: ThreadState, message: Omit<MessageSentData, 'label'>): ThreadEvent[] {
  if (state.deleted) return fail('resource_not_found', 'The thread was deleted.', 'threadId');
  if (state.sentEmailIds.has(message.emailId)) return [];
  return [{ type: 'MessageSent', data: { ...message, label: state.exists ? state.label : 'archive' } }];
}

/**
 * Where a thread stands once an imported message joins it: a new thread where the import put the
 * message; an archived thread comes back to the inbox with inbox mail, as for an arrival; any
 * other thread stays where it is (old mail never moves a conversation to spam or trash).
 */
export function labelOnImport(state: ThreadState, wanted: SettableLabel): SettableLabel {
  if (!state.exists) return wanted;
  return state.label === 'archive' && wanted === 'inbox' ? 'inbox' : state.label;
}

/**
 * Files an imported message in its thread. The same import key (a resumed or repeated import), or
 * the same Message-ID already in the thread (the message arrived live, or an earlier import
 * filed it), files nothing; a deleted thread takes no more mail (the caller opens a new one).
 */
export function decideImportMessage(
  state: ThreadState,
  message: Omit<MessageImportedData, 'label'> & { wanted: SettableLabel },
): ThreadEvent[] {
  if (state.deleted) return fail('resource_not_found', 'The thread was deleted.', 'threadId');
  const headerId = message.summary.messageId;
  if (state.importKeys.has(message.importKey) || (headerId && state.headerIds.has(headerId))) return [];
  const { wanted, ...data } = message;
  return [{ type: 'MessageImported', data: { ...data, label: labelOnImport(state, wanted) } }];
}

export function decideMarkThread(state: ThreadState, cmd: { threadId: string; unread: boolean; now: string }) {
  if (!state.exists || state.deleted) return notFound();
  if (state.unread === cmd.unread) return [];
  return [{ type: 'ThreadMarked', data: { threadId: cmd.threadId, unread: cmd.unread, at: cmd.now } }] as ThreadEvent[];
}

/** A label a thread can be moved to, else the refusal (checked before any change a request also makes). */
export function settableLabel(label: string): SettableLabel {
  if (isSettableLabel(label)) return label;
  if (isSystemLabel(label))
    return fail(
      'label_not_directly_settable',
      `\`${label}\` follows from the messages of a thread and cannot be set; use inbox, archive, spam or trash.`,
      'label',
    );
  return fail('label_not_found', `No system label \`${label}\`; custom labels go in \`addLabels\`.`, 'label');
}

/** Moves a thread between the settable system labels; `sent` and `drafts` follow from its messages. */
export function decideMoveThread(state: ThreadState, cmd: { threadId: string; label: string; now: string }) {
  if (!state.exists || state.deleted) return notFound();
  const to = settableLabel(cmd.label);
  if (state.label === to) return [];
  return [
    { type: 'ThreadMoved', data: { threadId: cmd.threadId, from: state.label, to, at: cmd.now } },
  ] as ThreadEvent[];
}

/** A delete moves a thread to the trash; a delete of a thread in the trash removes it for good. */
export function decideDeleteThread(state: ThreadState, cmd: { threadId: string; now: string }): ThreadEvent[] {
  if (!state.exists || state.deleted) return notFound();
  if (state.label !== 'trash')
    return [{ type: 'ThreadMoved', data: { threadId: cmd.threadId, from: state.label, to: 'trash', at: cmd.now } }];
  return [{ type: 'ThreadDeleted', data: { threadId: cmd.threadId, at: cmd.now } }];
}

/**
 * Puts custom labels on a thread and takes them off. Every id must be a live label of the
 * thread's mailbox (`known`), else 422 `label_not_found` naming it; a system label's name is 422
 * `label_not_directly_settable` (`label` moves the thread). One id in both lists is refused.
 */
export function decideChangeThreadLabels(
  state: ThreadState,
  cmd: { threadId: string; add: string[]; remove: string[]; known: ReadonlySet<string>; now: string },
): ThreadEvent[] {
  if (!state.exists || state.deleted) return notFound();
  for (const [param, ids] of [
    ['addLabels', cmd.add],
    ['removeLabels', cmd.remove],
  ] as const)
    for (const [i, id] of ids.entries()) {
      if (isSystemLabel(id))
        fail(
          'label_not_directly_settable',
          `\`${id}\` is a system label; \`label\` moves the thread.`,
          `${param}.${i}`,
        );
      if (!cmd.known.has(id)) fail('label_not_found', `No label \`${id}\` in this thread's mailbox.`, `${param}.${i}`);
    }
  for (const [i, id] of cmd.remove.entries())
    if (cmd.add.includes(id))
      fail('invalid_parameter', 'A label cannot be added and removed at once.', `removeLabels.${i}`);
  const added = [...new Set(cmd.add)].filter((id) => !state.labels.has(id));
  const removed = [...new Set(cmd.remove)].filter((id) => state.labels.has(id));
  if (added.length === 0 && removed.length === 0) return [];
  return [{ type: 'ThreadLabelsChanged', data: { threadId: cmd.threadId, added, removed, at: cmd.now } }];
}

/**
 * PATCH /threads/{id} as one decision: custom labels, the system label and read state together,
 * so a refusal of any part changes nothing. The parts touch different state, so their events
 * simply follow one another.
 */
export function decideUpdateThread(
  state: ThreadState,
  cmd: {
    threadId: string;
    unread?: boolean;
    label?: string;
    labels?: { add: string[]; remove: string[]; known: ReadonlySet<string> };
    now: string;
  },
): ThreadEvent[] {
  if (!state.exists || state.deleted) return notFound();
  const { threadId, now } = cmd;
  return [
    ...(cmd.label !== undefined ? decideMoveThread(state, { threadId, label: cmd.label, now }) : []),
    ...(cmd.labels ? decideChangeThreadLabels(state, { threadId, ...cmd.labels, now }) : []),
    ...(cmd.unread !== undefined ? decideMarkThread(state, { threadId, unread: cmd.unread, now }) : []),
  ];
}
