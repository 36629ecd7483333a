import type { Resource } from '../../route.ts';
import { roleOperations } from './operations.ts';

/** Roles: named permission lists that cap what members and keys under them may do. */
export const roles: Resource = {
  tag: 'Roles',
  description: 'Named permission lists that cap what members and keys under them may do.',
  modes: 'shared',
  narrowed: 'open',
  operations: roleOperations,
};
