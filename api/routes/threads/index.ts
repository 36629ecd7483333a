import type { Resource } from '../../route.ts';
import { threadOperations } from './operations.ts';

/**
 * Arriving mail, in threads per mailbox: the list (labels, unread, search), a thread with its
 * messages, read state and system labels, delete, and the raw message. Partitioned by mode (mail
 * arrives in live mode); a narrowed credential sees only the mailboxes it reaches.
 */
export const threads: Resource = {
  tag: 'Threads',
  description: 'Arriving mail in conversations per mailbox: reading, organising, searching and downloading it.',
  modes: 'partitioned',
  narrowed: 'reach',
  operations: threadOperations,
};
