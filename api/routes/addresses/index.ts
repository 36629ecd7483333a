import type { Resource } from '../../route.ts';
import { forwardOperations } from './forwards.ts';
import { loginOperations } from './logins.ts';
import { addressOperations } from './operations.ts';

/**
 * Addresses of the workspace's domains, their forwards, login name and app passwords.
 * Configuration both modes share; a narrowed credential sees only the addresses it reaches.
 */
export const addresses: Resource = {
  description: "Addresses on the workspace's domains, their forwards, login name and app passwords.",
  tag: 'Addresses',
  modes: 'shared',
  narrowed: 'reach',
  operations: (deps) => [...addressOperations(deps), ...forwardOperations(deps), ...loginOperations(deps)],
};
