import type { PendingThreading } from '../../domain/messages/pending-threading.ts';
import { normaliseSubject } from '../../domain/messages/threading.ts';
import { decideChangeThreadLabels, decideImportMessage } from '../../domain/threads/decide.ts';
import {
  type Mailbox,
  type MessageImportedData,
  type SettableLabel,
  threadStream,
} from '../../domain/threads/events.ts';
import { threadAggregate } from '../../domain/threads/state.ts';
import { type Actor, type CommandContext, execute } from '../execute.ts';
import { chooseThreadFor, type FilingLookups, fileInThread } from './handlers.ts';

export type ImportedMessage = Omit<
  MessageImportedData,
  'threadId' | 'mailbox' | 'threadedBy' | 'normalisedSubject' | 'label'
> & {
  /** Where the import's options put the message (labelOnImport decides the thread's place). */
  wanted: SettableLabel;
};

/**
 * Files a message of a mailbox import through the same threading as arriving and sent mail, and
 * nothing else: no rules, contacts, forwards or webhooks (imported mail is quiet). Answers the
 * thread and message ids, or null when the thread holds the message already (a duplicate). The
 * message id comes with the message (a digest of import and place), so a resumed run finds it.
 * A batch filing without waits for the read models passes its `pending` filings, which learn this one.
 */
export async function fileImportedMessage(
  ctx: CommandContext,
  lookups: Pick<FilingLookups, 'threading'>,
  workspaceId: string,
  mailbox: Mailbox,
  message: ImportedMessage,
  pending?: PendingThreading,
): Promise<{ threadId: string; messageId: string } | null> {
  const actor: Actor = { workspaceId, kind: 'system', id: message.importId };
  const s = message.summary;
  const { messageId } = message;
  const filed = await fileInThread(
    ctx,
    actor,
    workspaceId,
    await chooseThreadFor(
      pending ? withPending(lookups, pending) : lookups,
      workspaceId,
      mailbox.address,
      s,
      message.at,
    ),
    (threadId, threadedBy) => (state) =>
      decideImportMessage(state, {
        ...message,
        threadId,
        messageId,
        mailbox,
        threadedBy,
        normalisedSubject: normaliseSubject(s.subject),
      }),
  );
  if (filed === null) return null;
  pending?.filed(workspaceId, mailbox.address, { summary: s, at: message.at }, filed);
  return { threadId: filed.threadId, messageId };
}

/** The read models' threading answers with what a batch filed and they do not have yet. */
const withPending = (lookups: Pick<FilingLookups, 'threading'>, pending: PendingThreading) => ({
  threading: async (...args: Parameters<FilingLookups['threading']>) =>
    pending.knowledge(...args, await lookups.threading(...args)),
});

/** Puts an imported message's custom labels (live ids of its mailbox, `known`) on its thread. */
export async function labelImportedThread(
  ctx: CommandContext,
  actor: Actor,
  threadId: string,
  labelIds: string[],
  known: ReadonlySet<string>,
  now: string,
): Promise<void> {
  if (labelIds.length === 0) return;
  await execute(ctx, actor, threadStream(actor.workspaceId, threadId), threadAggregate, (s) =>
    decideChangeThreadLabels(s, { threadId, add: labelIds, remove: [], known, now }),
  );
}
