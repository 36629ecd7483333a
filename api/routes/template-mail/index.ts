import type { Resource } from '../../route.ts';
import { templateAnalyticsOperations } from './analytics.ts';
import { templateSendOperations } from './send.ts';
import { templateSendsOperations } from './sends.ts';

/**
 * Mail sent with a template: sending with one, its sends and their analytics. Email data, so
 * partitioned by mode like `/emails`, and a narrowed credential sends from and sees only the
 * addresses it reaches. A tag of its own: the Templates tag's operations are configuration both
 * modes share.
 */
export const templateMail: Resource = {
  tag: 'Template mail',
  description: 'Mail sent with a template: sending with one, the messages sent with it and their analytics.',
  modes: 'partitioned',
  narrowed: 'reach',
  operations: (deps) => [
    ...templateSendOperations(deps),
    ...templateSendsOperations(deps),
    ...templateAnalyticsOperations(deps),
  ],
};
