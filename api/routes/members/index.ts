import type { Resource } from '../../route.ts';
import { memberOperations } from './operations.ts';

/** Members: the people of a workspace, their roles and direct grants, and invitations. */
export const members: Resource = {
  tag: 'Members',
  description: 'The people of the workspace: invitations, roles, and direct grants of addresses and domains.',
  modes: 'shared',
  narrowed: 'read-only',
  operations: memberOperations,
};
