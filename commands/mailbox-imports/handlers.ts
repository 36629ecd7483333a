import type { Readable } from 'node:stream';
import {
  checkUploading,
  chunkSize,
  decideCancelMailboxImport,
  decideCreateMailboxImport,
  decideFinishMailboxImport,
  decideQueueMailboxImport,
  decideRecordMailboxImportProgress,
  decideRecordUploadDeleted,
  decideStartMailboxImport,
} from '../../domain/mailbox-imports/decide.ts';
import {
  IMPORT_FILE_BYTES_MAX,
  type ImportOptions,
  type ImportProgress,
  type MailboxImportFormat,
  mailboxImportsStream,
} from '../../domain/mailbox-imports/events.ts';
import { detectFormat } from '../../domain/mailbox-imports/formats.ts';
import { activeOn, mailboxImportsAggregate, type MailboxImportsState } from '../../domain/mailbox-imports/state.ts';
import { fail } from '../../domain/shared/errors.ts';
import type { Mailbox } from '../../domain/threads/events.ts';
import {
  type ArchiveFile,
  ArchiveRefused,
  ChunkSizeError,
  type ImportArchives,
  type ImportStorage,
} from '../../infra/imports/port.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';

const alreadyRunning = (id: string): never =>
  fail(
    'already_running',
    `The import ${id} into this address is queued or running; wait for it to end or cancel it first.`,
    'addressId',
  );

/** Where import uploads wait, the size of their parts, and the reader of archives among them. */
export interface MailboxImportPorts {
  storage: ImportStorage;
  chunkBytes: number;
  archives: ImportArchives;
}

/** An archive's own checks at start (infra/imports/archives.ts), as the refusals of the api. */
async function checkArchive(ports: MailboxImportPorts, archive: ArchiveFile, name: string, param: string) {
  try {
    await ports.archives.check(archive);
  } catch (error) {
    if (!(error instanceof ArchiveRefused)) throw error;
    fail(
      error.kind === 'dangerous' ? 'upload_dangerous' : 'unsupported_file',
      `${JSON.stringify(name)}: ${error.message}`,
      param,
    );
  }
}

const run = (
  ctx: CommandContext,
  actor: Actor,
  decide: (s: MailboxImportsState) => ReturnType<typeof decideStartMailboxImport>,
) => execute(ctx, actor, mailboxImportsStream(actor.workspaceId), mailboxImportsAggregate, decide);

const load = (ctx: CommandContext, workspaceId: string) =>
  loadState(ctx, mailboxImportsStream(workspaceId), mailboxImportsAggregate).then((r) => r.state);

/** A new import into `mailbox` (an address the caller reaches), `uploading`; answers its id. */
export async function createMailboxImport(
  ctx: CommandContext,
  ports: MailboxImportPorts,
  actor: Actor,
  input: { mailbox: Mailbox; files: { name: string; bytes: number }[]; options: ImportOptions },
  now: string,
): Promise<string> {
  const importId = newId.mailboxImport();
  await run(ctx, actor, (s) => decideCreateMailboxImport(s, { importId, ...input, chunkBytes: ports.chunkBytes, now }));
  return importId;
}

/** A store failure as the upload's answer: 507 when the disk is full. */
function storeFailed(error: unknown): never {
  if (error instanceof ChunkSizeError)
    fail(
      'invalid_parameter',
      `The part must be ${error.expected} bytes (the upload plan's); ${error.received} arrived. Nothing was kept.`,
      'chunk',
    );
  if ((error as { code?: string }).code === 'ENOSPC')
    fail('upload_storage_full', 'The import store is full; nothing was kept.', null);
  throw error;
}

/**
 * Stores part `chunk` of file `file` while the import is uploading: exactly the size the plan
 * says (`chunkBytes`, the last part what is left), else 422 and nothing kept. A part uploaded
 * again replaces the first.
 */
export async function uploadImportChunk(
  ctx: CommandContext,
  ports: MailboxImportPorts,
  actor: Actor,
  target: { importId: string; file: number; chunk: number },
  bytes: Buffer | Readable,
): Promise<void> {
  const found = checkUploading(await load(ctx, actor.workspaceId), target.importId);
  const file = found.files[target.file];
  if (!file) fail('invalid_parameter', `The import has ${found.files.length} files, numbered from 0.`, 'file');
  if (target.chunk >= file.chunks)
    fail('invalid_parameter', `File ${target.file} has ${file.chunks} parts, numbered from 0.`, 'chunk');
  const size = chunkSize(file.bytes, ports.chunkBytes, target.chunk);
  if (Buffer.isBuffer(bytes) && bytes.length === 0 && size > 0) fail('upload_empty', 'The part holds no bytes.', null);
  try {
    await ports.storage.putChunk(target.importId, target.file, target.chunk, size, bytes);
  } catch (error) {
    storeFailed(error);
  }
}

/**
 * Queues an uploaded import: every part there at its size (else 412 `missing_chunks` naming each
 * file and part), each file an mbox or a message by its bytes (else 400 `unsupported_file`, or
 * `upload_dangerous` for an executable). Starting a queued or running import again changes nothing.
 */
export async function startMailboxImport(
  ctx: CommandContext,
  ports: MailboxImportPorts,
  actor: Actor,
  importId: string,
  now: string,
): Promise<void> {
  const state = await load(ctx, actor.workspaceId);
  const found = state.imports.get(importId);
  if (found?.status !== 'uploading') {
    await run(ctx, actor, (s) => decideQueueMailboxImport(s, { importId, formats: [], now }));
    return;
  }
  const missing: string[] = [];
  for (const [i, file] of found.files.entries()) {
    const stored = await ports.storage.chunks(importId, i);
    const parts: number[] = [];
    for (let c = 0; c < file.chunks; c++)
      if (stored.get(c) !== chunkSize(file.bytes, ports.chunkBytes, c)) parts.push(c);
    if (parts.length > 0) missing.push(`file ${i} (${JSON.stringify(file.name)}) parts ${parts.join(', ')}`);
  }
  if (missing.length > 0) fail('missing_chunks', `Upload these first: ${missing.join('; ')}.`, 'files');
  const formats: MailboxImportFormat[] = [];
  for (const [i, file] of found.files.entries()) {
    const format = detectFormat(await ports.storage.head(importId, i, 4096));
    if (format === 'dangerous')
      fail('upload_dangerous', `File ${i} (${JSON.stringify(file.name)}) is an executable.`, `files.${i}`);
    if (format === 'unsupported')
      fail(
        'unsupported_file',
        `File ${i} (${JSON.stringify(file.name)}) is neither an mbox, a message (.eml), a zip nor a tgz.`,
        `files.${i}`,
      );
    if (format === 'zip' || format === 'tgz')
      await checkArchive(
        ports,
        { importId, file: i, bytes: file.bytes, chunks: file.chunks, chunkBytes: ports.chunkBytes, format },
        `File ${i} (${file.name})`,
        `files.${i}`,
      );
    formats.push(format);
  }
  await run(ctx, actor, (s) => decideQueueMailboxImport(s, { importId, formats, now }));
}

/** The import's folder deleted, and that recorded (once it is settled). */
export async function deleteImportUpload(
  ctx: CommandContext,
  ports: MailboxImportPorts,
  actor: Actor,
  importId: string,
) {
  await ports.storage.remove(importId);
  await run(ctx, actor, (s) => decideRecordUploadDeleted(s, { importId, now: new Date().toISOString() }));
}

/**
 * Uploading, queued or running → cancelled, the upload deleted; a running import stops at its
 * next checkpoint (what it filed stays). A settled import is answered as it is. `expired` (the
 * reason, recorded) is the upload expiry's cancel, of an import still uploading only.
 */
export async function cancelMailboxImport(
  ctx: CommandContext,
  ports: MailboxImportPorts,
  actor: Actor,
  importId: string,
  now: string,
  expired?: string,
): Promise<void> {
  const cmd = { importId, now, ...(expired === undefined ? {} : { expired }) };
  const { state } = await run(ctx, actor, (s) => decideCancelMailboxImport(s, cmd));
  if (state.imports.get(importId)?.status === 'cancelled') await deleteImportUpload(ctx, ports, actor, importId);
}

/** The process's first step; answers the status after it (`running`, or `cancelled` when a cancel won). */
export async function beginMailboxImport(ctx: CommandContext, actor: Actor, importId: string, now: string) {
  const { state } = await run(ctx, actor, (s) => decideStartMailboxImport(s, { importId, now }));
  return state.imports.get(importId)?.status ?? null;
}

export const recordMailboxImportProgress = (
  ctx: CommandContext,
  actor: Actor,
  importId: string,
  progress: ImportProgress,
  now: string,
) => run(ctx, actor, (s) => decideRecordMailboxImportProgress(s, { importId, progress, now }));

export const finishMailboxImport = (
  ctx: CommandContext,
  actor: Actor,
  importId: string,
  outcome: { progress: ImportProgress; error: string | null },
  now: string,
) => run(ctx, actor, (s) => decideFinishMailboxImport(s, { importId, ...outcome, now }));

/** Refuses an executable or a file neither an mbox nor a message, by its first bytes. */
function checkFormat(head: Buffer, name: string, param: string): MailboxImportFormat {
  const format = detectFormat(head);
  if (format === 'dangerous') fail('upload_dangerous', `${JSON.stringify(name)} is an executable.`, param);
  if (format === 'unsupported')
    fail('unsupported_file', `${JSON.stringify(name)} is neither an mbox, a message (.eml), a zip nor a tgz.`, param);
  return format;
}

/**
 * Create, upload and start in one call: the body is the one file, stored part by part as it
 * arrives (memory holds one part), at most 100 GB (413 `upload_too_large`), not empty (400
 * `upload_empty`), an mbox or a message by its first bytes. Nothing is recorded until the file is
 * whole; a refusal or a cut body leaves nothing behind. Answers the import's id, queued.
 */
export async function importWholeFile(
  ctx: CommandContext,
  ports: MailboxImportPorts,
  actor: Actor,
  input: { mailbox: Mailbox; name: string; options: ImportOptions },
  source: AsyncIterable<Buffer>,
  now: string,
): Promise<string> {
  // Refused before the bytes are read: a busy address should not cost an upload.
  const active = activeOn(await load(ctx, actor.workspaceId), input.mailbox.addressId);
  if (active) alreadyRunning(active);
  const importId = newId.mailboxImport();
  const { chunkBytes } = ports;
  let size = 0;
  let chunk = 0;
  let parts: Buffer[] = [];
  let held = 0;
  let format: MailboxImportFormat | null = null;
  const flush = async (bytes: Buffer) => {
    format ??= checkFormat(bytes.subarray(0, 4096), input.name, 'filename');
    await ports.storage.putChunk(importId, 0, chunk++, bytes.length, bytes);
  };
  try {
    for await (const data of source) {
      size += data.length;
      if (size > IMPORT_FILE_BYTES_MAX)
        fail('upload_too_large', `A file of an import is at most ${IMPORT_FILE_BYTES_MAX} bytes.`, null);
      parts.push(data);
      held += data.length;
      while (held >= chunkBytes) {
        const all = Buffer.concat(parts, held);
        await flush(all.subarray(0, chunkBytes));
        parts = [all.subarray(chunkBytes)];
        held -= chunkBytes;
      }
    }
    if (size === 0) fail('upload_empty', 'The body holds no bytes.', null);
    if (held > 0) await flush(Buffer.concat(parts, held));
    // An archive's directory is at its end: checked once it is all there, before anything is recorded.
    if (format === 'zip' || format === 'tgz')
      await checkArchive(
        ports,
        { importId, file: 0, bytes: size, chunks: chunk, chunkBytes, format },
        input.name,
        'filename',
      );
  } catch (error) {
    await ports.storage.remove(importId);
    storeFailed(error);
  }
  try {
    await run(ctx, actor, (s) =>
      decideCreateMailboxImport(s, {
        importId,
        ...input,
        files: [{ name: input.name, bytes: size }],
        chunkBytes,
        now,
      }),
    );
  } catch (error) {
    await ports.storage.remove(importId);
    throw error;
  }
  await run(ctx, actor, (s) => decideQueueMailboxImport(s, { importId, formats: [format ?? 'mbox'], now }));
  return importId;
}
