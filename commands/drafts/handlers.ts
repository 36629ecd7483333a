import {
  decideCreateDraft,
  decideDeleteDraft,
  decideRefuseDraftSend,
  decideSendDraft,
  decideStartDraftSend,
  decideUpdateDraft,
} from '../../domain/drafts/decide.ts';
import { type DraftContent, draftStream } from '../../domain/drafts/events.ts';
import { draftAggregate, type DraftState, isLive } from '../../domain/drafts/state.ts';
import { digestId } from '../../domain/shared/ids.ts';
import { DomainError, fail } from '../../domain/shared/errors.ts';
import { type SendContext, type Sender, type Sent, sendEmail } from '../emails/handlers.ts';
import { type Actor, type CommandContext, execute, loadState } from '../execute.ts';
import { recordUpload, releaseFileUses, reserveFileUses } from '../files/handlers.ts';
import { newId } from '../ids.ts';

const importedDraftFileId = (draftId: string, part: number) => digestId('importedDraftFile', `${draftId}:${part}`);

/** The uploads among a draft's attachments, each with its `param` (files of received mail need no reservation). */
export type DraftUploads = { fileId: string; param: string }[];

/**
 * The uses of the uploads a draft names are reserved before the draft names them and released
 * after it stops (domain/files/events.ts): a crash in between leaves a use too many, which a
 * delete of the file finds stale, never a draft naming a deleted file.
 */
export async function createDraft(
  ctx: CommandContext,
  actor: Actor,
  content: DraftContent,
  uploads: DraftUploads,
  now: string,
) {
  const draftId = newId.draft();
  await reserveFileUses(ctx, actor, draftId, uploads, now);
  await execute(
    ctx,
    actor,
    draftStream(actor.workspaceId, draftId),
    draftAggregate,
    (s) => decideCreateDraft(s, { draftId, content, now }),
    { likelyNew: true },
  );
  return draftId;
}

/**
 * A draft made by a mailbox import (processes/mailbox-imports), under an id drawn from the
 * import's place (`importedDraft`): each attachment becomes an upload of the mailbox, its bytes
 * the blob the import's parse stored, under an id drawn from the draft (`importedDraftFile`), so a
 * repeat after a crash names the same files and the same draft and records nothing twice. Nothing
 * reacts to drafts or uploads: the import stays quiet.
 */
export async function importDraft(
  ctx: CommandContext,
  actor: Actor,
  draftId: string,
  content: Omit<DraftContent, 'attachments'>,
  parts: { filename: string | null; contentType: string; size: number; sha256: string }[],
  now: string,
) {
  const attachments = parts.map((p, i) => ({
    fileId: importedDraftFileId(draftId, i),
    filename: p.filename,
    contentType: p.contentType,
    size: p.size,
  }));
  const owner = { address: content.address, domain: content.domain };
  await Promise.all(
    parts.map((p, i) =>
      recordUpload(ctx, actor, {
        fileId: attachments[i]!.fileId,
        owner,
        filename: p.filename ?? `attachment-${i + 1}`,
        contentType: p.contentType,
        size: p.size,
        sha256: p.sha256,
        uploadedAt: now,
      }),
    ),
  );
  const uploads = attachments.map((a, i) => ({ fileId: a.fileId, param: `attachments.${i}.fileId` }));
  await reserveFileUses(ctx, actor, draftId, uploads, now);
  await execute(ctx, actor, draftStream(actor.workspaceId, draftId), draftAggregate, (s) =>
    decideCreateDraft(s, { draftId, content: { ...content, attachments }, now }),
  );
}

export async function updateDraft(
  ctx: CommandContext,
  actor: Actor,
  draftId: string,
  content: DraftContent,
  uploads: DraftUploads,
  now: string,
) {
  const stream = draftStream(actor.workspaceId, draftId);
  const before = await loadState(ctx, stream, draftAggregate);
  if (!isLive(before.state)) fail('resource_not_found', 'No such draft.', 'id');
  await reserveFileUses(ctx, actor, draftId, uploads, now);
  // The files dropped are those of the content this edit replaced, which an edit stored since the
  // read above may have changed: the state the decision was made on, not the one read first.
  let replaced: DraftState = before.state;
  try {
    await execute(ctx, actor, stream, draftAggregate, (s) => {
      replaced = s;
      return decideUpdateDraft(s, { draftId, content, now });
    });
  } catch (error) {
    // Deleted or sent since the read above (whatever it named was released then), or held by a
    // send: the files this edit reserved are named by nothing.
    if (error instanceof DomainError && (error.code === 'resource_not_found' || error.code === 'draft_sending'))
      await releaseFileUses(
        ctx,
        actor,
        draftId,
        uploads.map((u) => u.fileId),
        now,
      );
    throw error;
  }
  const kept = new Set(content.attachments.map((a) => a.fileId));
  const dropped = (replaced.content?.attachments ?? []).map((a) => a.fileId).filter((id) => !kept.has(id));
  await releaseFileUses(ctx, actor, draftId, dropped, now);
}

export async function deleteDraft(ctx: CommandContext, actor: Actor, draftId: string, now: string) {
  const { state } = await execute(ctx, actor, draftStream(actor.workspaceId, draftId), draftAggregate, (s) =>
    decideDeleteDraft(s, { draftId, now }),
  );
  await releaseFileUses(ctx, actor, draftId, state.content?.attachments.map((a) => a.fileId) ?? [], now);
}

/** The email a draft is sent as: the same draft always names the same one, so a retried send never sends twice. */
const draftEmailId = (partition: string, draftId: string) => digestId('draftEmail', `${partition}:${draftId}`);

/**
 * Hands the draft to the sending pipeline as `POST /emails` does (`sendEmail`: every check and
 * refusal of a send applies, and a refused draft stays as it was), then records it sent, which
 * takes it out of the drafts, and releases its files. The draft is held first (DraftSending), and
 * what is sent is its content as held: an edit racing the send is refused 409, never answered and
 * then lost.
 */
export async function sendDraft(ctx: SendContext, sender: Sender, draftId: string, now: Date): Promise<Sent> {
  const { actor } = sender;
  const stream = draftStream(actor.workspaceId, draftId);
  const emailId = draftEmailId(actor.workspaceId, draftId);
  const held = { draftId, emailId, now: now.toISOString() };
  const { state } = await execute(ctx.commands, actor, stream, draftAggregate, (s) => decideStartDraftSend(s, held));
  const c = state.content;
  if (!c) return fail('resource_not_found', 'No such draft.', 'id');
  let sent: Sent;
  try {
    sent = await sendEmail(
      ctx,
      sender,
      {
        emailId,
        from: c.from,
        to: c.to,
        cc: c.cc,
        bcc: c.bcc,
        replyTo: c.replyTo,
        ...(c.subject !== null ? { subject: c.subject } : {}),
        ...(c.text !== null ? { text: c.text } : {}),
        ...(c.html !== null ? { html: c.html } : {}),
        ...(c.signatureId !== null ? { signatureId: c.signatureId } : {}),
        attachments: c.attachments.map((a) => ({ fileId: a.fileId })),
        ...(c.inReplyTo !== null ? { inReplyTo: c.inReplyTo } : {}),
        references: c.references,
      },
      now,
    );
  } catch (error) {
    if (error instanceof DomainError)
      await execute(ctx.commands, actor, stream, draftAggregate, (s) => decideRefuseDraftSend(s, held));
    throw error;
  }
  const at = now.toISOString();
  // An edit stored after a hold lapsed (a send that stalled past SEND_HOLD_MS) may have named more
  // files: the sent draft releases those too.
  let last: DraftState = state;
  await execute(ctx.commands, actor, stream, draftAggregate, (s) => {
    last = s;
    return decideSendDraft(s, { draftId, emailId, now: at });
  });
  const named = [...c.attachments, ...(last.content?.attachments ?? [])].map((a) => a.fileId);
  await releaseFileUses(ctx.commands, actor, draftId, [...new Set(named)], at);
  return sent;
}
