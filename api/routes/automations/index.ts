import type { Resource } from '../../route.ts';
import { automationOperations } from './operations.ts';

/** Automations: a contact event enrols the contact in a run of steps (waits, branches, send requests). */
export const automations: Resource = {
  tag: 'Automations',
  description: 'A contact event enrols the contact in a run of steps: waits, branches and send requests.',
  modes: 'partitioned',
  narrowed: 'open',
  operations: automationOperations,
};
