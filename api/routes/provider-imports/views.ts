import { z } from 'zod';
import { IMPORT_RESOURCES, PROVIDERS, type ImportReport } from '../../../domain/provider-imports/providers.ts';
import { idPatterns } from '../../../domain/shared/ids.ts';
import { findProviderImport, type ProviderImportRow } from '../../../projections/provider-imports/queries.ts';
import { lookup } from '../../lookups.ts';

const counts = z.object({
  imported: z.number().int().describe('Made here by this import (or by this import before a resume).'),
  existing: z.number().int().describe('Here already: made by an earlier import, or the same address, name or URL.'),
  failed: z.number().int().describe('Refused here; each has an entry in `errors`.'),
});

export const reportView = z
  .object({
    suppressions: counts,
    audiences: counts,
    contacts: counts.extend({
      unsubscribed: z
        .number()
        .int()
        .describe('Contacts unsubscribed at the provider: not imported, each address once.'),
    }),
    templates: counts,
    webhooks: counts,
    checklist: z.object({
      domains: z.array(z.object({ name: z.string(), status: z.string(), todo: z.string() })),
      apiKeys: z.array(z.object({ name: z.string(), todo: z.string() })),
    }),
    errors: z.array(
      z.object({
        resource: z.enum(IMPORT_RESOURCES),
        sourceId: z.string().nullable().describe("The provider's id of the row; null when a whole resource failed."),
        code: z.string(),
        message: z.string(),
      }),
    ),
    errorsDropped: z.number().int().describe('Errors past the first 100, counted only.'),
  })
  .describe('What the import did so far, per resource; updated after each resource and at the end.');

export const providerImportView = z.object({
  object: z.literal('provider_import'),
  id: z.string(),
  provider: z.enum(PROVIDERS),
  status: z.enum(['queued', 'running', 'completed', 'failed', 'cancelled']),
  resources: z.array(z.enum(IMPORT_RESOURCES)),
  report: reportView.nullable().describe('Null until the first resource is done.'),
  lastError: z.string().nullable().describe('Why it failed; set only when `status` is `failed`.'),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

export function viewProviderImport(row: ProviderImportRow): z.infer<typeof providerImportView> {
  return {
    object: 'provider_import',
    id: row.id,
    provider: row.provider,
    status: row.status,
    resources: row.resources,
    report: (row.report as ImportReport | null) ?? null,
    lastError: row.last_error,
    createdAt: row.created_at.toISOString(),
    startedAt: iso(row.started_at),
    finishedAt: iso(row.finished_at),
  };
}

export const providerImportOr404 = lookup(findProviderImport, {
  code: 'resource_not_found',
  message: 'No such provider import.',
  param: 'id',
  pattern: idPatterns.providerImport,
});
