/**
 * The providers a workspace can move in from, in the order the api enumerates them; the first is
 * the default (docs/decisions/provider-imports.md says why these five).
 */
export const PROVIDERS = ['resend', 'sendgrid', 'postmark', 'mailgun', 'brevo'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** What an import can bring, in the order it brings them: audiences before the contacts that join them. */
export const IMPORT_RESOURCES = [
  'suppressions',
  'audiences',
  'contacts',
  'templates',
  'webhooks',
  'domains',
  'api-keys',
] as const;
export type ImportResource = (typeof IMPORT_RESOURCES)[number];

/** Resources that become rows here; the others come back as a checklist. */
export const FILLED_RESOURCES = ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks'] as const;
export type FilledResource = (typeof FILLED_RESOURCES)[number];

/** The most per-row errors a report keeps; the rest are counted in `errorsDropped`. */
export const REPORT_ERRORS_MAX = 100;

export interface ResourceCounts {
  imported: number;
  existing: number;
  failed: number;
}

export interface ImportReport {
  suppressions: ResourceCounts;
  audiences: ResourceCounts;
  contacts: ResourceCounts & { unsubscribed: number };
  templates: ResourceCounts;
  webhooks: ResourceCounts;
  checklist: {
    domains: { name: string; status: string; todo: string }[];
    apiKeys: { name: string; todo: string }[];
  };
  errors: { resource: ImportResource; sourceId: string | null; code: string; message: string }[];
  errorsDropped: number;
}

const zero = (): ResourceCounts => ({ imported: 0, existing: 0, failed: 0 });

export function emptyReport(): ImportReport {
  return {
    suppressions: zero(),
    audiences: zero(),
    contacts: { ...zero(), unsubscribed: 0 },
    templates: zero(),
    webhooks: zero(),
    checklist: { domains: [], apiKeys: [] },
    errors: [],
    errorsDropped: 0,
  };
}

/** The report with one more error, kept within `REPORT_ERRORS_MAX`. */
export function withError(report: ImportReport, error: ImportReport['errors'][number]): ImportReport {
  if (report.errors.length >= REPORT_ERRORS_MAX) return { ...report, errorsDropped: report.errorsDropped + 1 };
  return { ...report, errors: [...report.errors, error] };
}

/** The resources asked for, each once, in the order an import brings them. */
export const inImportOrder = (asked: readonly ImportResource[]): ImportResource[] =>
  IMPORT_RESOURCES.filter((r) => asked.includes(r));
