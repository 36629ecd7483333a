import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';
import { Mailbox } from '../threads/events.ts';

/**
 * Imports of old mail (mbox, eml) into one address, one stream per workspace: at most one import
 * is queued or running per address, decided over the whole set. The uploaded files wait in the
 * import's own folder (infra/imports) until the import settles; the messages become
 * `MessageImported` events of the threads they join (domain/threads).
 */
export const IMPORT_FILES_MAX = 50;
/** 100 GB per file (the spec's Limits). */
export const IMPORT_FILE_BYTES_MAX = 100_000_000_000;

export const ImportOptions = z.object({
  keepInbox: z.boolean(),
  includeSpam: z.boolean(),
  includeTrash: z.boolean(),
});
export type ImportOptions = z.infer<typeof ImportOptions>;

export const ImportFile = z.object({ name: z.string(), bytes: z.number().int(), chunks: z.number().int() });
export type ImportFile = z.infer<typeof ImportFile>;

/** What the import did so far: loose counts so a key added later never makes an old event unreadable. */
export const ImportProgress = z.object({
  processedBytes: z.number().int(),
  counts: z.object({
    imported: z.number().int(),
    duplicate: z.number().int(),
    skipped: z.number().int(),
    notImported: z.number().int(),
  }),
  labelsCreated: z.number().int(),
  labelsSkipped: z.number().int(),
});
export type ImportProgress = z.infer<typeof ImportProgress>;

export const emptyProgress = (): ImportProgress => ({
  processedBytes: 0,
  counts: { imported: 0, duplicate: 0, skipped: 0, notImported: 0 },
  labelsCreated: 0,
  labelsSkipped: 0,
});

export const MAILBOX_IMPORT_FORMATS = ['mbox', 'eml', 'zip', 'tgz'] as const;
export type MailboxImportFormat = (typeof MAILBOX_IMPORT_FORMATS)[number];

export const MailboxImportCreated = defineEvent(
  'MailboxImportCreated',
  z.object({
    importId: z.string(),
    mailbox: Mailbox,
    files: z.array(ImportFile),
    chunkBytes: z.number().int(),
    options: ImportOptions,
    createdAt: z.string(),
  }),
);

/** Every chunk is there; `formats` is what each file's bytes were found to be, in file order. */
export const MailboxImportQueued = defineEvent(
  'MailboxImportQueued',
  z.object({ importId: z.string(), formats: z.array(z.enum(MAILBOX_IMPORT_FORMATS)), queuedAt: z.string() }),
);

export const MailboxImportStarted = defineEvent(
  'MailboxImportStarted',
  z.object({ importId: z.string(), startedAt: z.string() }),
);

/** The progress at a checkpoint of the process. */
export const MailboxImportProgressed = defineEvent(
  'MailboxImportProgressed',
  z.object({ importId: z.string(), progress: ImportProgress, at: z.string() }),
);

export const MailboxImportCompleted = defineEvent(
  'MailboxImportCompleted',
  z.object({ importId: z.string(), progress: ImportProgress, completedAt: z.string() }),
);

export const MailboxImportFailed = defineEvent(
  'MailboxImportFailed',
  z.object({ importId: z.string(), progress: ImportProgress, error: z.string(), failedAt: z.string() }),
);

/** By the caller, or (`reason` set) by the service: an upload left too long without a part. */
export const MailboxImportCancelled = defineEvent(
  'MailboxImportCancelled',
  z.object({ importId: z.string(), cancelledAt: z.string(), reason: z.string().optional() }),
);

/** The uploaded files are gone from the import's folder (after it settled). */
export const MailboxImportUploadDeleted = defineEvent(
  'MailboxImportUploadDeleted',
  z.object({ importId: z.string(), at: z.string() }),
);

export const mailboxImportEvents = [
  MailboxImportCreated,
  MailboxImportQueued,
  MailboxImportStarted,
  MailboxImportProgressed,
  MailboxImportCompleted,
  MailboxImportFailed,
  MailboxImportCancelled,
  MailboxImportUploadDeleted,
];
export type MailboxImportEvent =
  | EventOf<typeof MailboxImportCreated>
  | EventOf<typeof MailboxImportQueued>
  | EventOf<typeof MailboxImportStarted>
  | EventOf<typeof MailboxImportProgressed>
  | EventOf<typeof MailboxImportCompleted>
  | EventOf<typeof MailboxImportFailed>
  | EventOf<typeof MailboxImportCancelled>
  | EventOf<typeof MailboxImportUploadDeleted>;

export const mailboxImportsStream = (workspaceId: string) => `ws-${workspaceId}.mailbox-imports`;
