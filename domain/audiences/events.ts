import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const AudienceCreated = defineEvent(
  'AudienceCreated',
  z.object({
    audienceId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    showOnPreferences: z.boolean(),
    /** `default` on the one audience that holds every contact; null otherwise. */
    builtin: z.literal('default').nullable(),
    createdAt: z.string(),
  }),
);

/** The editable fields after the change, whole. */
export const AudienceUpdated = defineEvent(
  'AudienceUpdated',
  z.object({
    audienceId: z.string(),
    name: z.string(),
    description: z.string().nullable(),
    showOnPreferences: z.boolean(),
    updatedAt: z.string(),
  }),
);

/** The audience is gone, and its memberships with it. */
export const AudienceDeleted = defineEvent(
  'AudienceDeleted',
  z.object({ audienceId: z.string(), deletedAt: z.string() }),
);

export const audienceEvents = [AudienceCreated, AudienceUpdated, AudienceDeleted];
export type AudienceEvent =
  | EventOf<typeof AudienceCreated>
  | EventOf<typeof AudienceUpdated>
  | EventOf<typeof AudienceDeleted>;

/**
 * Every audience of a workspace is one small aggregate: the single default audience and the
 * 100-audience limit are decided on one stream, so optimistic concurrency settles races.
 * Membership lives on the contacts' streams.
 */
export const audiencesStream = (workspaceId: string) => `ws-${workspaceId}.audiences`;
