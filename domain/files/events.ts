import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';
import { digestId } from '../shared/ids.ts';

/**
 * A file uploaded for later use (a draft's or a send's attachment), one stream per file. The bytes
 * are in the blob store under `sha256`; the events carry what describes them. Attachments of
 * received mail are files too, but theirs is the message's stream (domain/threads): they come and
 * go with their thread and are never uploaded or deleted here.
 *
 * The stream also holds which drafts name the file: a draft reserves its use before it names the
 * file and releases it when it stops (edit, delete, send); a delete is refused while a use is held
 * (409 `file_in_use`). Both are appended with the revision read, so a draft saved and a delete
 * racing on one file cannot both win.
 */

/** Where an upload belongs: a mailbox (an address, or `*@<domain>`), or the whole workspace (null). */
export const FileOwner = z.object({ address: z.string(), domain: z.string() }).nullable();
export type FileOwner = z.infer<typeof FileOwner>;

export const FileUploaded = defineEvent(
  'FileUploaded',
  z.object({
    fileId: z.string(),
    owner: FileOwner,
    filename: z.string(),
    contentType: z.string(),
    size: z.number().int(),
    sha256: z.string(),
    uploadedAt: z.string(),
  }),
);

export const FileUseReserved = defineEvent(
  'FileUseReserved',
  z.object({ fileId: z.string(), draftId: z.string(), at: z.string() }),
);

export const FileUseReleased = defineEvent(
  'FileUseReleased',
  z.object({ fileId: z.string(), draftId: z.string(), at: z.string() }),
);

/** The blob stays: the store keeps no references (docs/decisions/receiving.md). */
export const FileDeleted = defineEvent('FileDeleted', z.object({ fileId: z.string(), at: z.string() }));

export const fileEvents = [FileUploaded, FileUseReserved, FileUseReleased, FileDeleted];
export type FileEvent =
  | EventOf<typeof FileUploaded>
  | EventOf<typeof FileUseReserved>
  | EventOf<typeof FileUseReleased>
  | EventOf<typeof FileDeleted>;
export type FileUploadedData = EventOf<typeof FileUploaded>['data'];

export const fileStream = (partition: string, fileId: string) => `ws-${partition}.file-${fileId}`;

/** The file id of a received message's `part`th attachment (MIME order): the same on every replay. */
export const attachmentFileId = (messageId: string, part: number) => digestId('attachmentFile', `${messageId}:${part}`);
