import type { Resource } from '../../route.ts';
import { broadcastOperations } from './operations.ts';

/** Broadcasts: a template to audiences. Like the audiences they reach, they belong to the whole workspace. */
export const broadcasts: Resource = {
  tag: 'Broadcasts',
  description: 'A published template sent to the contacts of audiences, now or at a scheduled time.',
  modes: 'partitioned',
  narrowed: 'refuse',
  operations: broadcastOperations,
};
