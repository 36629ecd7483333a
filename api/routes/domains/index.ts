import type { Resource } from '../../route.ts';
import { domainActions } from './actions.ts';
import { domainOperations } from './operations.ts';

/**
 * The workspace's domains: configuration both modes share. Narrowed credentials read every domain
 * (the spec) and change only the domains their own lists hold.
 */
export const domains: Resource = {
  description: 'Domains of the workspace: their DNS records, verification and DKIM keys.',
  tag: 'Domains',
  modes: 'shared',
  narrowed: 'within-lists',
  operations: (deps) => [...domainOperations(deps), ...domainActions(deps)],
};
