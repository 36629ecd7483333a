import { fail } from '../shared/errors.ts';
import type { FileEvent, FileUploadedData } from './events.ts';
import type { FileState } from './state.ts';

/** The same file id again (a retried upload) records nothing. */
export function decideUploadFile(state: FileState, cmd: FileUploadedData): FileEvent[] {
  if (state.exists) return [];
  return [{ type: 'FileUploaded', data: cmd }];
}

/** A draft names the file: refused for a file that is gone, with the draft's `param`. */
export function decideReserveFileUse(
  state: FileState,
  cmd: { fileId: string; draftId: string; param: string; now: string },
): FileEvent[] {
  if (!state.exists || state.deleted) fail('invalid_parameter', 'No file the caller reaches has this id.', cmd.param);
  if (state.uses.has(cmd.draftId)) return [];
  return [{ type: 'FileUseReserved', data: { fileId: cmd.fileId, draftId: cmd.draftId, at: cmd.now } }];
}

export function decideReleaseFileUse(state: FileState, cmd: { fileId: string; draftId: string; now: string }) {
  if (!state.uses.has(cmd.draftId)) return [];
  return [{ type: 'FileUseReleased', data: { fileId: cmd.fileId, draftId: cmd.draftId, at: cmd.now } }] as FileEvent[];
}

/**
 * Deleted while no draft names it (409 `file_in_use`). `stale` are uses the command found over
 * (their draft no longer names the file: a crash between the draft's change and the release),
 * released in the same append.
 */
export function decideDeleteFile(state: FileState, cmd: { fileId: string; stale: string[]; now: string }): FileEvent[] {
  if (!state.exists || state.deleted) fail('resource_not_found', 'No such file.', 'id');
  const stale = cmd.stale.filter((id) => state.uses.has(id));
  if (state.uses.size > stale.length)
    fail('file_in_use', 'A draft names this file as an attachment; remove it from the draft first.', 'id');
  return [
    ...stale.map(
      (draftId): FileEvent => ({ type: 'FileUseReleased', data: { fileId: cmd.fileId, draftId, at: cmd.now } }),
    ),
    { type: 'FileDeleted', data: { fileId: cmd.fileId, at: cmd.now } },
  ];
}
