import type { Resource } from '../../route.ts';
import { stepUpOperations } from './operations.ts';

/** Step-up verification: an OAuth app asks the person for a code and is elevated for 60 minutes. */
export const stepUp: Resource = {
  tag: 'Step-up verification',
  description:
    'OAuth access tokens only: a code (mailed, or from the authenticator when two-factor is on) elevates the app for the person for 60 minutes, which sensitive changes need.',
  modes: 'shared',
  narrowed: 'open',
  operations: stepUpOperations,
};
