import type { Resource } from '../../route.ts';
import { labelOperations } from './operations.ts';

/**
 * Labels: the system labels every mailbox has, and custom labels per mailbox. Configuration both
 * modes share; a narrowed credential sees and changes only the labels of the mailboxes it reaches,
 * as on threads.
 */
export const labels: Resource = {
  tag: 'Labels',
  description: 'System labels, and custom labels per mailbox that threads carry.',
  modes: 'shared',
  narrowed: 'reach',
  operations: labelOperations,
};
