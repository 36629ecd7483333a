import type { Resource } from '../../route.ts';
import { signatureOperations } from './operations.ts';

/**
 * Signatures of the workspace's addresses and catch-alls. Configuration both modes share; a
 * narrowed credential sees and writes only the signatures of the addresses it holds.
 */
export const signatures: Resource = {
  description: 'Signatures of addresses and catch-alls, their defaults, and copies to other addresses.',
  tag: 'Signatures',
  modes: 'shared',
  narrowed: 'reach',
  operations: signatureOperations,
};
