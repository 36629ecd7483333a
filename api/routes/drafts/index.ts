import type { Resource } from '../../route.ts';
import { draftOperations } from './operations.ts';

/**
 * Messages being written, each in the mailbox of its `from` address, and sent through the same
 * pipeline as `POST /emails`. Partitioned by mode; a narrowed credential sees and writes only the
 * drafts of the mailboxes it reaches.
 */
export const drafts: Resource = {
  tag: 'Drafts',
  description: 'Messages being written: saved, edited, listed, deleted, and sent through the sending pipeline.',
  modes: 'partitioned',
  narrowed: 'reach',
  operations: draftOperations,
};
