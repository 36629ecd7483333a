import type { Resource } from '../../route.ts';
import { taskOperations } from './operations.ts';

/**
 * Tasks: instructions an assistant runs on a schedule, on arriving mail or on request. They act
 * over the whole workspace's mail, contacts and files, so a narrowed credential cannot use them;
 * configuration both modes share.
 */
export const tasks: Resource = {
  description:
    'Plain-language instructions an assistant runs on a schedule, on arriving mail, or on request; their runs.',
  tag: 'Tasks',
  modes: 'shared',
  narrowed: 'refuse',
  operations: taskOperations,
};
