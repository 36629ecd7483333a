import type { Resource } from '../../route.ts';
import { ruleOperations } from './operations.ts';

/**
 * Rules of a mailbox, run on every arriving message in order. Configuration both modes share; a
 * narrowed credential sees and writes only the rules of the mailboxes it reaches.
 */
export const rules: Resource = {
  description: 'Rules per mailbox: conditions over arriving mail and the actions they take, in order, with a dry run.',
  tag: 'Rules',
  modes: 'shared',
  narrowed: 'reach',
  operations: ruleOperations,
};
