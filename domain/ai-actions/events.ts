import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * What an AI action was spent on: a send or preview with `translate`, a template's design or
 * redesign, a turn of a task's run (one action, ten with the `advanced` model).
 */
export const AI_PURPOSES = ['translate', 'design', 'redesign', 'task'] as const;

/**
 * The daily allowance of AI actions of a workspace, counted on one stream per workspace and UTC
 * day. An action is spent before the model is asked, appended with the revision read, so
 * concurrent requests past the allowance cannot both win; `used` is the day's total after the
 * event, so the last event of the stream is the count.
 */
export const AiActionsSpent = defineEvent(
  'AiActionsSpent',
  z.object({
    /** `YYYY-MM-DD`, UTC. */
    day: z.string(),
    count: z.number().int().positive(),
    used: z.number().int().nonnegative(),
    purpose: z.enum(AI_PURPOSES),
    spentAt: z.string(),
  }),
);

/** Actions given back: the model failed, so the request did nothing and costs nothing. */
export const AiActionsReturned = defineEvent(
  'AiActionsReturned',
  z.object({
    day: z.string(),
    count: z.number().int().positive(),
    used: z.number().int().nonnegative(),
    returnedAt: z.string(),
  }),
);

export const aiActionEvents = [AiActionsSpent, AiActionsReturned];
export type AiActionEvent = EventOf<typeof AiActionsSpent> | EventOf<typeof AiActionsReturned>;

/**
 * The workspace id itself, never a test partition: a test key's translation asks the same model
 * at the same cost.
 */
export const aiActionsStream = (workspaceId: string, day: string) => `ws-${workspaceId}.ai-actions-${day}`;
