import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * One broadcast: a published template sent to the contacts of one or more audiences, one stream
 * per broadcast in the mode's partition. The recipients are not in the log: the start takes them
 * from the audiences into the process's table (processes/broadcasts), and each becomes an email
 * whose `EmailAccepted` names the broadcast.
 */
export const BroadcastCreated = defineEvent(
  'BroadcastCreated',
  z.object({
    broadcastId: z.string(),
    name: z.string().nullable(),
    /** As given (`Name <address>` or an address), checked against the workspace's addresses. */
    from: z.string(),
    templateId: z.string(),
    /** Replaces the template's subject when set. */
    subject: z.string().nullable(),
    audienceIds: z.array(z.string()),
    /** Null: at once. */
    scheduledAt: z.string().nullable(),
    createdAt: z.string(),
  }),
);

/** The recipients were taken (`recipients` of them, suppressed and unsubscribed ones left out); no cancel after this. */
export const BroadcastStarted = defineEvent(
  'BroadcastStarted',
  z.object({ broadcastId: z.string(), recipients: z.number().int().nonnegative(), startedAt: z.string() }),
);

export const BroadcastCancelled = defineEvent(
  'BroadcastCancelled',
  z.object({ broadcastId: z.string(), cancelledAt: z.string() }),
);

/** Every recipient was handed to sending: `accepted` became emails, `refused` were refused by a send's checks. */
export const BroadcastCompleted = defineEvent(
  'BroadcastCompleted',
  z.object({
    broadcastId: z.string(),
    accepted: z.number().int().nonnegative(),
    refused: z.number().int().nonnegative(),
    completedAt: z.string(),
  }),
);

export const broadcastEvents = [BroadcastCreated, BroadcastStarted, BroadcastCancelled, BroadcastCompleted];
export type BroadcastEvent =
  | EventOf<typeof BroadcastCreated>
  | EventOf<typeof BroadcastStarted>
  | EventOf<typeof BroadcastCancelled>
  | EventOf<typeof BroadcastCompleted>;

export const broadcastStream = (partition: string, broadcastId: string) => `ws-${partition}.broadcast-${broadcastId}`;
