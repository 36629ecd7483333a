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

/**
 * Opens and clicks recorded per message at most: past it they are still answered (the pixel, the
 * redirect) but not recorded, so whoever holds a link cannot grow the message's stream without end.
 */
export const ENGAGEMENTS_MAX = 1000;

/** A User-Agent is kept to this many characters. */
export const USER_AGENT_MAX = 512;

export interface EngagementCommand {
  /** Lower-case; empty when the message went to several recipients (one body, no telling which opened). */
  recipient: string;
  /** The link's original target for a click; null for an open. */
  url: string | null;
  userAgent: string | null;
  at: string;
}

/**
 * Records an open (`url` null) or a click seen through the tracking host. Only a message that was
 * accepted and not cancelled went out with tracked links, so only it records them; the recipient
 * must be one of the message's (or none, for a message to several). Past `ENGAGEMENTS_MAX` nothing
 * is decided.
 */
export function decideRecordEngagement(state: EmailState, cmd: EngagementCommand): EmailEvent[] {
  const accepted = state.accepted;
  if (!accepted || state.cancelled) fail('resource_not_found', 'No such email.', 'id');
  const known = cmd.recipient === '' ? accepted.recipients.length > 1 : accepted.recipients.includes(cmd.recipient);
  if (!known) fail('resource_not_found', 'No such recipient of the email.', 'recipient');
  if (state.engagements >= ENGAGEMENTS_MAX) return [];
  const data = {
    emailId: accepted.emailId,
    messageId: accepted.messageId,
    from: accepted.from,
    stream: accepted.stream,
    recipient: cmd.recipient,
    userAgent: cmd.userAgent === null ? null : cmd.userAgent.slice(0, USER_AGENT_MAX),
    at: cmd.at,
  };
  return cmd.url === null
    ? [{ type: 'EmailOpened', data }]
    : [{ type: 'EmailLinkClicked', data: { ...data, url: cmd.url } }];
}
