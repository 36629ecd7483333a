import type { Resource } from '../../route.ts';
import { providerImportOperations } from './operations.ts';

/**
 * Imports from other sending providers. They fill the whole workspace's live data, so narrowed
 * credentials are refused and test keys only read (docs/decisions/provider-imports.md).
 */
export const providerImports: Resource = {
  tag: 'Provider imports',
  description:
    'Moving in from another sending provider: suppressions, audiences, contacts, templates and webhooks, with domains and API keys as a checklist.',
  modes: 'shared',
  narrowed: 'refuse',
  operations: providerImportOperations,
};
