import type { Resource } from '../../route.ts';
import { mailboxImportOperations } from './operations.ts';

/**
 * Imports of old mail into an address (docs/decisions/imports.md). Live mail, so test keys only
 * read; a narrowed credential sees and makes only imports into the addresses it reaches.
 */
export const imports: Resource = {
  tag: 'Mailbox imports',
  description: 'Bringing old mail into an address: mbox and .eml files uploaded in parts, imported in the background.',
  modes: 'shared',
  narrowed: 'reach',
  operations: mailboxImportOperations,
};
