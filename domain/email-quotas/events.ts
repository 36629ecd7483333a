import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * The monthly send allowance of a workspace, counted on one stream per workspace and calendar
 * month (UTC). Sends reserve their units before they are accepted, appended with the revision
 * read, so concurrent sends past the allowance cannot both win. `used` is the month's total after
 * the reservation: a reader that knows the stream's last event knows the count.
 */
export const EmailQuotaReserved = defineEvent(
  'EmailQuotaReserved',
  z.object({
    /** `YYYY-MM`, UTC. */
    month: z.string(),
    count: z.number().int().positive(),
    used: z.number().int().nonnegative(),
    reservedAt: z.string(),
  }),
);

export const emailQuotaEvents = [EmailQuotaReserved];
export type EmailQuotaEvent = EventOf<typeof EmailQuotaReserved>;

/** Live mail only: the workspace id itself, never a test partition (test mail never leaves). */
export const emailQuotaStream = (workspaceId: string, month: string) => `ws-${workspaceId}.email-quota-${month}`;
