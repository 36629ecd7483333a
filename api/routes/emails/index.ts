import type { Resource } from '../../route.ts';
import { emailOperations } from './operations.ts';

/**
 * Sent mail: sending (one, or a batch), the list, a message with its recipients and history, and
 * cancelling a scheduled one. Partitioned by mode; a narrowed credential sends from and sees only
 * the addresses it reaches.
 */
export const emails: Resource = {
  tag: 'Emails',
  description: 'Sending mail, and the sent messages with their recipients and delivery history.',
  modes: 'partitioned',
  narrowed: 'reach',
  operations: emailOperations,
};
