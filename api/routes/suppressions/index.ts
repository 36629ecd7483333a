import type { Resource } from '../../route.ts';
import { suppressionOperations } from './operations.ts';
import { unsubscribeOperations } from './unsubscribes.ts';

/** The workspace's suppression list: addresses no mail goes to. */
export const suppressions: Resource = {
  tag: 'Suppressions',
  description:
    'The suppression list: addresses no mail goes to; and the unsubscribes, addresses no broadcast-lane mail goes to.',
  modes: 'partitioned',
  narrowed: 'read-only',
  // The unsubscribes first: `/suppressions/unsubscribes` is not a suppression's id.
  operations: (deps) => [...unsubscribeOperations(deps), ...suppressionOperations(deps)],
};
