import type { Resource } from '../../route.ts';
import { suppressionOperations } from './operations.ts';

/** The workspace's suppression list: addresses no mail goes to. */
export const suppressions: Resource = {
  tag: 'Suppressions',
  description: 'The suppression list: addresses no mail goes to.',
  modes: 'partitioned',
  narrowed: 'read-only',
  operations: suppressionOperations,
};
