import type { Resource } from '../../route.ts';
import { templateActions } from './actions.ts';
import { fontOperations } from './fonts.ts';
import { imageOperations } from './images.ts';
import { designOperations } from './design.ts';
import { templateOperations } from './operations.ts';
import { previewOperations } from './preview.ts';
import { versionOperations } from './versions.ts';

/** Email templates and their versions: configuration both modes share, rendered by sends. */
export const templates: Resource = {
  tag: 'Templates',
  description: 'Email templates and their versions, rendered by sends.',
  modes: 'shared',
  narrowed: 'open',
  operations: (deps) => [
    ...templateOperations(deps),
    ...templateActions(deps),
    ...versionOperations(deps),
    ...previewOperations(deps),
    ...fontOperations(deps),
    ...imageOperations(deps),
    ...designOperations(deps),
  ],
};
