import type { Resource } from '../../route.ts';
import { exportOperations } from './operations.ts';

/**
 * Exports of the whole workspace (docs/decisions/exports.md): they hold every address's mail, so
 * credentials narrowed to some addresses are refused, and test keys only read.
 */
export const workspaceExports: Resource = {
  tag: 'Exports',
  description: 'The whole workspace as one zip: mail as mbox, contacts as vCard, audiences, templates and more.',
  modes: 'shared',
  narrowed: 'refuse',
  operations: exportOperations,
};
