import type { Resource } from '../../route.ts';
import { fileOperations } from './operations.ts';

/**
 * Files: the attachments of received mail and uploads for later use (a draft's or a send's
 * attachments). Partitioned by mode (mail arrives in live mode); a narrowed credential sees only
 * the files of the mailboxes it reaches.
 */
export const files: Resource = {
  tag: 'Files',
  description: 'Attachments of received mail, and files uploaded to attach to drafts and sends.',
  modes: 'partitioned',
  narrowed: 'reach',
  operations: fileOperations,
};
