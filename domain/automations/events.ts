import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

const definition = {
  name: z.string(),
  trigger: z.object({ event: z.string(), filters: z.array(z.record(z.string(), z.unknown())) }),
  steps: z.array(z.record(z.string(), z.unknown())),
};

export const AutomationCreated = defineEvent(
  'AutomationCreated',
  z.object({ automationId: z.string(), ...definition, status: z.enum(['live', 'paused']), createdAt: z.string() }),
);
/** The definition as it stands after the change. Runs already under way keep the steps they started with. */
export const AutomationUpdated = defineEvent(
  'AutomationUpdated',
  z.object({ automationId: z.string(), ...definition, updatedAt: z.string() }),
);
export const AutomationPaused = defineEvent(
  'AutomationPaused',
  z.object({ automationId: z.string(), pausedAt: z.string() }),
);
export const AutomationResumed = defineEvent(
  'AutomationResumed',
  z.object({ automationId: z.string(), resumedAt: z.string() }),
);
/** The automation is gone: it enrols nobody, and its runs under way end where they stand. */
export const AutomationDeleted = defineEvent(
  'AutomationDeleted',
  z.object({ automationId: z.string(), deletedAt: z.string() }),
);

export const automationEvents = [
  AutomationCreated,
  AutomationUpdated,
  AutomationPaused,
  AutomationResumed,
  AutomationDeleted,
];
export type AutomationEvent =
  | EventOf<typeof AutomationCreated>
  | EventOf<typeof AutomationUpdated>
  | EventOf<typeof AutomationPaused>
  | EventOf<typeof AutomationResumed>
  | EventOf<typeof AutomationDeleted>;

export const automationStream = (workspaceId: string, automationId: string) =>
  `ws-${workspaceId}.automation-${automationId}`;
