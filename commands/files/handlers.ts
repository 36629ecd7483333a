import { draftStream } from '../../domain/drafts/events.ts';
import { draftAggregate } from '../../domain/drafts/state.ts';
import {
  decideDeleteFile,
  decideReleaseFileUse,
  decideReserveFileUse,
  decideUploadFile,
} from '../../domain/files/decide.ts';
import { type FileOwner, type FileUploadedData, fileStream } from '../../domain/files/events.ts';
import { fileAggregate } from '../../domain/files/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import type { BlobStore } from '../../infra/blobs/port.ts';
import { type Actor, type CommandContext, execute, loadState } from '../execute.ts';
import { newId } from '../ids.ts';

export interface Upload {
  owner: FileOwner;
  filename: string;
  contentType: string;
  bytes: Uint8Array;
}

/**
 * Stores an upload's bytes (502 `upload_failed`, or 507 `upload_storage_full` when the store has
 * no room; nothing recorded either way) and records the file.
 */
export async function uploadFile(ctx: CommandContext, blobs: BlobStore, actor: Actor, upload: Upload, now: string) {
  let stored: { sha256: string; size: number };
  try {
    stored = await blobs.put(upload.bytes);
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOSPC')
      fail('upload_storage_full', 'The file store is full; nothing was stored.', null);
    fail('upload_failed', 'The file could not be stored; retry unchanged.', null);
  }
  const data = {
    fileId: newId.file(),
    owner: upload.owner,
    filename: upload.filename,
    contentType: upload.contentType,
    size: stored.size,
    sha256: stored.sha256,
    uploadedAt: now,
  };
  await recordUpload(ctx, actor, data);
  return data;
}

/** Records a file whose bytes are stored already (an upload's, or an imported draft's part). */
export async function recordUpload(ctx: CommandContext, actor: Actor, data: FileUploadedData) {
  await execute(
    ctx,
    actor,
    fileStream(actor.workspaceId, data.fileId),
    fileAggregate,
    (s) => decideUploadFile(s, data),
    {
      likelyNew: true,
    },
  );
}

/**
 * Deletes an upload no draft names (409 `file_in_use`). A use whose draft is gone or no longer
 * names the file (a crash between the draft's change and its release) is released with it.
 */
export async function deleteFile(ctx: CommandContext, actor: Actor, fileId: string, now: string) {
  const stream = fileStream(actor.workspaceId, fileId);
  const { state } = await loadState(ctx, stream, fileAggregate);
  const drafts = await Promise.all(
    [...state.uses].map(async (draftId) => {
      const { state: draft } = await loadState(ctx, draftStream(actor.workspaceId, draftId), draftAggregate);
      const names = draft.content?.attachments.some((a) => a.fileId === fileId) ?? false;
      return { draftId, stale: draft.gone || !names };
    }),
  );
  const stale = drafts.filter((d) => d.stale).map((d) => d.draftId);
  await execute(ctx, actor, stream, fileAggregate, (s) => decideDeleteFile(s, { fileId, stale, now }));
}

/** A draft is about to name these uploads (`param` per file: the draft's `attachments.<i>.fileId`). */
export async function reserveFileUses(
  ctx: CommandContext,
  actor: Actor,
  draftId: string,
  files: { fileId: string; param: string }[],
  now: string,
) {
  // One stream per file: all at once, so a draft's save waits on one append, not one per file.
  // The refusal reported is the first file's in the draft's order, as one by one would.
  const outcomes = await Promise.allSettled(
    files.map(({ fileId, param }) =>
      execute(ctx, actor, fileStream(actor.workspaceId, fileId), fileAggregate, (s) =>
        decideReserveFileUse(s, { fileId, draftId, param, now }),
      ),
    ),
  );
  const refused = outcomes.find((o) => o.status === 'rejected');
  if (refused) throw refused.reason;
}

/** The draft no longer names these uploads. */
export async function releaseFileUses(
  ctx: CommandContext,
  actor: Actor,
  draftId: string,
  fileIds: string[],
  now: string,
) {
  await Promise.all(
    fileIds.map((fileId) =>
      execute(ctx, actor, fileStream(actor.workspaceId, fileId), fileAggregate, (s) =>
        decideReleaseFileUse(s, { fileId, draftId, now }),
      ),
    ),
  );
}
