import type { Resource } from '../../route.ts';
import { selfOperations } from './operations.ts';

/** The calling credential: who it is, its rotation, its own request log. */
export const self: Resource = {
  tag: 'Credential self-description',
  description: 'The calling credential: who it is, its rotation, its own request log.',
  modes: 'shared',
  narrowed: 'open',
  operations: selfOperations,
};
