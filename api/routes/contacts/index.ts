import type { Resource } from '../../route.ts';
import { contactOperations } from './operations.ts';

/** The contact book. It belongs to the whole workspace, so narrowed credentials are refused on all of it. */
export const contacts: Resource = {
  tag: 'Contacts',
  description: 'The contact book of the workspace.',
  modes: 'partitioned',
  narrowed: 'refuse',
  operations: contactOperations,
};
