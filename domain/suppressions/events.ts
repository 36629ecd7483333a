import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const SUPPRESSION_REASONS = ['bounce', 'complaint', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** Delivered to webhook endpoints as `suppression.added`. */
export const SuppressionAdded = defineEvent(
  'SuppressionAdded',
  z.object({
    suppressionId: z.string(),
    email: z.string(),
    reason: z.enum(SUPPRESSION_REASONS),
    detail: z.string().nullable(),
    removable: z.boolean(),
    createdAt: z.string(),
  }),
);

export const SuppressionRemoved = defineEvent(
  'SuppressionRemoved',
  z.object({ suppressionId: z.string(), email: z.string(), removedAt: z.string() }),
);

export const suppressionEvents = [SuppressionAdded, SuppressionRemoved];
export type SuppressionEvent = EventOf<typeof SuppressionAdded> | EventOf<typeof SuppressionRemoved>;

/** Addresses compare without case or surrounding space; this is the form stored and keyed on. */
export const normaliseAddress = (email: string) => email.trim().toLowerCase();

/** One stream per address: appending to it with the revision read is what keeps an address listed once. */
export const suppressionStream = (workspaceId: string, email: string) =>
  `ws-${workspaceId}.suppression-${normaliseAddress(email)}`;
