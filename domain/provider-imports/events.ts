import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';
import { IMPORT_RESOURCES, PROVIDERS } from './providers.ts';

/**
 * A workspace's imports from other sending providers, one stream per workspace: at most one is
 * queued or running at a time, decided over the whole set. The provider's API key is never in an
 * event (the audit history prints events): it waits in the secret vault while the import runs.
 * The report is loose JSON so a field added later never makes an old event unreadable.
 */
const report = z.record(z.string(), z.unknown());

export const ProviderImportQueued = defineEvent(
  'ProviderImportQueued',
  z.object({
    importId: z.string(),
    provider: z.enum(PROVIDERS),
    resources: z.array(z.enum(IMPORT_RESOURCES)),
    queuedAt: z.string(),
  }),
);

export const ProviderImportStarted = defineEvent(
  'ProviderImportStarted',
  z.object({ importId: z.string(), startedAt: z.string() }),
);

/** The report so far, after a resource is done. */
export const ProviderImportProgressed = defineEvent(
  'ProviderImportProgressed',
  z.object({ importId: z.string(), report, at: z.string() }),
);

export const ProviderImportCompleted = defineEvent(
  'ProviderImportCompleted',
  z.object({ importId: z.string(), report, completedAt: z.string() }),
);

/** The import could not go on at all (the key refused midway, the key gone); `error` says why. */
export const ProviderImportFailed = defineEvent(
  'ProviderImportFailed',
  z.object({ importId: z.string(), report, error: z.string(), failedAt: z.string() }),
);

export const ProviderImportCancelled = defineEvent(
  'ProviderImportCancelled',
  z.object({ importId: z.string(), cancelledAt: z.string() }),
);

export const providerImportEvents = [
  ProviderImportQueued,
  ProviderImportStarted,
  ProviderImportProgressed,
  ProviderImportCompleted,
  ProviderImportFailed,
  ProviderImportCancelled,
];
export type ProviderImportEvent =
  | EventOf<typeof ProviderImportQueued>
  | EventOf<typeof ProviderImportStarted>
  | EventOf<typeof ProviderImportProgressed>
  | EventOf<typeof ProviderImportCompleted>
  | EventOf<typeof ProviderImportFailed>
  | EventOf<typeof ProviderImportCancelled>;

export const providerImportsStream = (workspaceId: string) => `ws-${workspaceId}.provider-imports`;

/** Where the import's provider key waits in the secret vault while it runs. */
export const providerImportSecretId = (importId: string) => `provider-import:${importId}`;
