import { z } from 'zod';
import { EXPORT_PHASES } from '../../../domain/exports/events.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import type { Permission } from '../../../domain/shared/permissions.ts';
import { type ExportRow, findExport } from '../../../projections/exports/queries.ts';
import { lookup } from '../../lookups.ts';

/** The spec's ten read scopes, every one needed by each export operation. */
export const EXPORT_SCOPES: readonly Permission[] = [
  'threads:read',
  'emails:read',
  'drafts:read',
  'files:read',
  'labels:read',
  'contacts:read',
  'audiences:read',
  'calendar:read',
  'templates:read',
  'rules:read',
];

const counts = z.record(z.string(), z.number().int());

export const exportView = z.object({
  object: z.literal('export'),
  id: z.string(),
  status: z
    .enum(['queued', 'running', 'ready', 'failed', 'expired'])
    .describe('`failed`: see `error`; `expired`: ready more than 365 days ago, no longer downloadable.'),
  phase: z.enum(EXPORT_PHASES).describe('What is being written: mail, then contacts, audiences, … the manifest.'),
  createdAt: z.string(),
  createdBy: z.object({
    kind: z.enum(['apiKey', 'oauth']),
    id: z.string().nullable().describe('The key id, or the OAuth client id.'),
  }),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
  expiresAt: z.string().nullable().describe('365 days after it was ready.'),
  sizeBytes: z.number().int().nullable(),
  fileName: z.string().nullable(),
  threadsDone: z.number().int(),
  threadsTotal: z.number().int(),
  counts: counts.nullable().describe("What the zip holds, by kind (the manifest's counts); set once ready."),
  error: z.string().nullable(),
});

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

/** An export as the api shows it: a ready one past its expiry is `expired` before the retention removed it. */
export function viewExport(row: ExportRow, now = new Date()): z.infer<typeof exportView> {
  const expired =
    row.status === 'expired' || (row.status === 'ready' && row.expires_at !== null && row.expires_at <= now);
  return {
    object: 'export',
    id: row.id,
    status: expired ? 'expired' : row.status,
    phase: row.phase,
    createdAt: row.created_at.toISOString(),
    createdBy: row.created_by,
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
    expiresAt: iso(row.expires_at),
    sizeBytes: row.size_bytes === null ? null : Number(row.size_bytes),
    fileName: row.file_name,
    threadsDone: row.threads_done,
    threadsTotal: row.threads_total,
    counts: row.counts,
    error: row.error,
  };
}

export const exportPreviewView = z.object({
  object: z.literal('export_preview'),
  allowed: z.boolean(),
  reason: z
    .enum(['not-permitted', 'mailbox-login', 'two-factor-required'])
    .nullable()
    .describe('Why not, when not allowed: `not-permitted` (the credential may not export).'),
  nextAvailableAt: z
    .string()
    .nullable()
    .describe('When an export can start next (a day after the last); null when one is under way.'),
  activeExportId: z.string().nullable(),
  counts: z
    .object({
      threads: z.number().int(),
      attachments: z.number().int(),
      attachmentBytes: z.number().int(),
      deletedFiles: z.number().int().describe('Attachments of threads in the trash.'),
      contacts: z.number().int(),
      audiences: z.number().int(),
      calendarEvents: z.number().int(),
      templates: z.number().int(),
      rules: z.number().int(),
      labels: z.number().int(),
      notes: z.number().int(),
      addresses: z.number().int(),
    })
    .nullable()
    .describe('What an export would hold now; null when not allowed.'),
});

export const exportOr404 = lookup(findExport, {
  code: 'resource_not_found',
  message: 'No such export.',
  param: 'id',
  pattern: idPatterns.export,
});
