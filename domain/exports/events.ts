import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * Exports of the whole workspace as one zip, one stream per workspace: "one at a time, once per
 * day" is decided over the whole set. The zip itself is a blob (the blob store); the events carry
 * its address, never its bytes.
 */
export const EXPORT_KEEP_DAYS = 365;
/** One export per day: a new one only this long after the last that did not fail. */
export const EXPORT_EVERY_MS = 24 * 60 * 60 * 1000;

/** What the export is doing: `queued` until the process takes it, then each part of the zip in turn. */
export const EXPORT_PHASES = [
  'queued',
  'mail',
  'contacts',
  'audiences',
  'calendar',
  'templates',
  'rules',
  'labels',
  'addresses',
  'manifest',
  'done',
] as const;
export type ExportPhase = (typeof EXPORT_PHASES)[number];

/** Who asked for it: the key, or the OAuth app (its client id). */
export const ExportCreator = z.object({ kind: z.enum(['apiKey', 'oauth']), id: z.string().nullable() });
export type ExportCreator = z.infer<typeof ExportCreator>;

/** What the zip holds, by kind: loose, so a kind added later never makes an old event unreadable. */
export const ExportCounts = z.record(z.string(), z.number().int());
export type ExportCounts = z.infer<typeof ExportCounts>;

export const ExportRequested = defineEvent(
  'ExportRequested',
  z.object({ exportId: z.string(), createdBy: ExportCreator, createdAt: z.string() }),
);

/**
 * The process began writing the zip, from its first byte. `attempt` counts the beginnings: a
 * process that died mid-way is followed by a new attempt that starts over, and only the progress
 * and completion of the latest attempt count.
 */
export const ExportStarted = defineEvent(
  'ExportStarted',
  z.object({ exportId: z.string(), attempt: z.number().int(), threadsTotal: z.number().int(), startedAt: z.string() }),
);

export const ExportProgressed = defineEvent(
  'ExportProgressed',
  z.object({
    exportId: z.string(),
    attempt: z.number().int(),
    phase: z.enum(EXPORT_PHASES),
    threadsDone: z.number().int(),
    threadsTotal: z.number().int(),
    at: z.string(),
  }),
);

/** The zip is whole in the blob store; downloadable until `expiresAt`. */
export const ExportCompleted = defineEvent(
  'ExportCompleted',
  z.object({
    exportId: z.string(),
    attempt: z.number().int(),
    file: z.object({ sha256: z.string(), size: z.number().int() }),
    fileName: z.string(),
    counts: ExportCounts,
    finishedAt: z.string(),
    expiresAt: z.string(),
  }),
);

export const ExportFailed = defineEvent(
  'ExportFailed',
  z.object({ exportId: z.string(), error: z.string(), failedAt: z.string() }),
);

/** The retention process deleted the zip of an expired export. */
export const ExportFileDeleted = defineEvent('ExportFileDeleted', z.object({ exportId: z.string(), at: z.string() }));

export const exportEvents = [
  ExportRequested,
  ExportStarted,
  ExportProgressed,
  ExportCompleted,
  ExportFailed,
  ExportFileDeleted,
];
export type ExportEvent =
  | EventOf<typeof ExportRequested>
  | EventOf<typeof ExportStarted>
  | EventOf<typeof ExportProgressed>
  | EventOf<typeof ExportCompleted>
  | EventOf<typeof ExportFailed>
  | EventOf<typeof ExportFileDeleted>;

export const exportsStream = (workspaceId: string) => `ws-${workspaceId}.exports`;
