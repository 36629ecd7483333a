import type { Resource } from '../../route.ts';
import { templateAnalyticsOperations } from './analytics.ts';
import { templateSendOperations } from './send.ts';
import { templateSendsOperations } from './sends.ts';

/**
 * Mail sent with a template: sending with one, its sends and their analytics. Email data, so
 * partitioned by mode like `/emails`, and a narrowed credential sends from and sees only the
 * addresses it reaches; listed under the Templates tag.
 */
export const templateMail: Resource = {
  tag: 'Templates',
  description: 'Email templates and their versions, rendered by sends.',
  modes: 'partitioned',
  narrowed: 'reach',
  operations: (deps) => [
    ...templateSendOperations(deps),
    ...templateSendsOperations(deps),
    ...templateAnalyticsOperations(deps),
  ],
};
