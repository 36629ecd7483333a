import { fail } from '../shared/errors.ts';
import type { Mailbox } from '../threads/events.ts';
import {
  IMPORT_FILES_MAX,
  type ImportOptions,
  type ImportProgress,
  type MailboxImportEvent,
  type MailboxImportFormat,
} from './events.ts';
import { activeOn, type MailboxImportState, type MailboxImportsState, SETTLED } from './state.ts';

const alreadyRunning = (id: string): never =>
  fail(
    'already_running',
    `The import ${id} into this address is queued or running; wait for it to end or cancel it first.`,
    'addressId',
  );

/** How many parts of `chunkBytes` a file of `bytes` is uploaded in (an empty file is one empty part). */
export const chunksOf = (bytes: number, chunkBytes: number) => Math.max(1, Math.ceil(bytes / chunkBytes));

/** The size part `index` of a file of `bytes` must have: `chunkBytes`, the last one what is left. */
export const chunkSize = (bytes: number, chunkBytes: number, index: number) =>
  Math.min(chunkBytes, bytes - index * chunkBytes);

export interface CreateMailboxImport {
  importId: string;
  mailbox: Mailbox;
  files: { name: string; bytes: number }[];
  chunkBytes: number;
  options: ImportOptions;
  now: string;
}

/**
 * A new import in `uploading`, with its upload plan. More than 50 files is 400 `too_many_files`;
 * an address with an import queued or running is 409 `already_running`.
 */
export function decideCreateMailboxImport(state: MailboxImportsState, cmd: CreateMailboxImport): MailboxImportEvent[] {
  if (state.imports.has(cmd.importId)) return [];
  if (cmd.files.length > IMPORT_FILES_MAX)
    fail('too_many_files', `An import takes at most ${IMPORT_FILES_MAX} files.`, 'files');
  const active = activeOn(state, cmd.mailbox.addressId);
  if (active) alreadyRunning(active);
  return [
    {
      type: 'MailboxImportCreated',
      data: {
        importId: cmd.importId,
        mailbox: cmd.mailbox,
        files: cmd.files.map((f) => ({ ...f, chunks: chunksOf(f.bytes, cmd.chunkBytes) })),
        chunkBytes: cmd.chunkBytes,
        options: cmd.options,
        createdAt: cmd.now,
      },
    },
  ];
}

function importOf(state: MailboxImportsState, importId: string): MailboxImportState {
  const found = state.imports.get(importId);
  if (!found) fail('resource_not_found', 'No such import.', 'id');
  return found;
}

/**
 * The upload is whole (the caller checked every part, 412 `missing_chunks` otherwise): the import
 * is queued. Starting a started import again decides nothing; a settled one cannot start (409
 * `import_settled`); another import queued or running into the address is 409 `already_running`.
 */
export function decideQueueMailboxImport(
  state: MailboxImportsState,
  cmd: { importId: string; formats: MailboxImportFormat[]; now: string },
): MailboxImportEvent[] {
  const found = importOf(state, cmd.importId);
  if (found.status !== 'uploading') {
    if (SETTLED.includes(found.status))
      fail('import_settled', `The import is ${found.status}; create a new one.`, 'id');
    return [];
  }
  const active = activeOn(state, found.addressId);
  if (active) alreadyRunning(active);
  return [{ type: 'MailboxImportQueued', data: { importId: cmd.importId, formats: cmd.formats, queuedAt: cmd.now } }];
}

/** A chunk is taken only while the import is uploading (409 `import_settled` / `already_running` after). */
export function checkUploading(state: MailboxImportsState, importId: string): MailboxImportState {
  const found = importOf(state, importId);
  if (found.status === 'uploading') return found;
  if (SETTLED.includes(found.status)) return fail('import_settled', `The import is ${found.status}.`, 'id');
  return fail('already_running', 'The import is started; its files can no longer change.', 'id');
}

/** The process's first step; an import cancelled before it decides nothing. */
export function decideStartMailboxImport(
  state: MailboxImportsState,
  cmd: { importId: string; now: string },
): MailboxImportEvent[] {
  if (state.imports.get(cmd.importId)?.status !== 'queued') return [];
  return [{ type: 'MailboxImportStarted', data: { importId: cmd.importId, startedAt: cmd.now } }];
}

export function decideRecordMailboxImportProgress(
  state: MailboxImportsState,
  cmd: { importId: string; progress: ImportProgress; now: string },
): MailboxImportEvent[] {
  if (state.imports.get(cmd.importId)?.status !== 'running') return [];
  return [{ type: 'MailboxImportProgressed', data: { importId: cmd.importId, progress: cmd.progress, at: cmd.now } }];
}

/** Settles a running import (completed, or failed with `error`); anything else decides nothing. */
export function decideFinishMailboxImport(
  state: MailboxImportsState,
  cmd: { importId: string; progress: ImportProgress; error: string | null; now: string },
): MailboxImportEvent[] {
  const status = state.imports.get(cmd.importId)?.status;
  if (status !== 'running' && status !== 'queued') return [];
  const { importId, progress } = cmd;
  if (cmd.error === null)
    return [{ type: 'MailboxImportCompleted', data: { importId, progress, completedAt: cmd.now } }];
  return [{ type: 'MailboxImportFailed', data: { importId, progress, error: cmd.error, failedAt: cmd.now } }];
}

/** Uploading, queued or running → cancelled; cancelling a settled import decides nothing. */
/**
 * A cancel with an `expired` reason (the upload expiry, processes/mailbox-imports) cancels only an
 * import still uploading: one started since the expiry looked is left to run.
 */
export function decideCancelMailboxImport(
  state: MailboxImportsState,
  cmd: { importId: string; now: string; expired?: string },
): MailboxImportEvent[] {
  const found = importOf(state, cmd.importId);
  if (SETTLED.includes(found.status)) return [];
  if (cmd.expired !== undefined && found.status !== 'uploading') return [];
  const reason = cmd.expired === undefined ? {} : { reason: cmd.expired };
  return [{ type: 'MailboxImportCancelled', data: { importId: cmd.importId, cancelledAt: cmd.now, ...reason } }];
}

/** Once, after the import settled and its folder is gone. */
export function decideRecordUploadDeleted(
  state: MailboxImportsState,
  cmd: { importId: string; now: string },
): MailboxImportEvent[] {
  const found = state.imports.get(cmd.importId);
  if (!found || found.uploadDeleted || !SETTLED.includes(found.status)) return [];
  return [{ type: 'MailboxImportUploadDeleted', data: { importId: cmd.importId, at: cmd.now } }];
}
