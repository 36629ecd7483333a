import { fail } from '../shared/errors.ts';
import type { z } from 'zod';
import type { EmailAccepted, EmailEvent } from './events.ts';
import type { EmailState } from './state.ts';

export type AcceptedData = z.output<(typeof EmailAccepted)['schema']>;

/**
 * Accepts a message the command has checked and composed. The id is the command's: a stream that
 * already holds an acceptance is a repeat (an automation step run again), which decides nothing.
 */
export function decideAcceptEmail(state: EmailState, cmd: AcceptedData): EmailEvent[] {
  if (state.accepted) return [];
  return [{ type: 'EmailAccepted', data: cmd }];
}

/**
 * Takes back a scheduled message while it is still only waiting: its time not yet come and
 * delivery not started. `EmailSendingStarted` is appended with the revision read, so a cancel and
 * the start of sending cannot both win. Cancelling a cancelled message again decides nothing.
 */
export function decideCancelEmail(state: EmailState, cmd: { now: string }): EmailEvent[] {
  const accepted = state.accepted;
  if (!accepted) fail('resource_not_found', 'No such email.', 'id');
  if (state.cancelled) return [];
  if (accepted.scheduledAt === null)
    fail('email_not_cancellable', 'Only a scheduled email can be cancelled; this one was sent at once.', null);
  if (state.sendingStarted || Date.parse(accepted.scheduledAt) <= Date.parse(cmd.now))
    fail('email_not_cancellable', 'The email is already going out; it can no longer be cancelled.', null);
  return [{ type: 'EmailCancelled', data: { emailId: accepted.emailId, cancelledAt: cmd.now } }];
}
