import type { Resource } from '../../route.ts';
import { sendingStreamOperations } from './operations.ts';

/** The sending lanes: bounce and complaint rates per lane, each pausing alone. */
export const sendingStreams: Resource = {
  tag: 'Sending streams',
  description:
    'The sending lanes (`transactional`, `broadcast`): counts and rates over 7 days; a lane past its bounce or complaint threshold pauses alone.',
  modes: 'shared',
  narrowed: 'read-only',
  operations: sendingStreamOperations,
};
