import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/** A template took a place in the workspace, with its name and slug. */
export const TemplateRegistered = defineEvent(
  'TemplateRegistered',
  z.object({ templateId: z.string(), name: z.string(), slug: z.string(), registeredAt: z.string() }),
);

export const TemplateRenamed = defineEvent(
  'TemplateRenamed',
  z.object({ templateId: z.string(), name: z.string(), renamedAt: z.string() }),
);

/** The template was deleted: its place, name and slug are free again. */
export const TemplateUnregistered = defineEvent(
  'TemplateUnregistered',
  z.object({ templateId: z.string(), unregisteredAt: z.string() }),
);

export const templateNameEvents = [TemplateRegistered, TemplateRenamed, TemplateUnregistered];
export type TemplateNameEvent =
  | EventOf<typeof TemplateRegistered>
  | EventOf<typeof TemplateRenamed>
  | EventOf<typeof TemplateUnregistered>;

/**
 * The names, slugs and places of all templates of a workspace are one small aggregate: name and
 * slug uniqueness and the 200-template limit are decided on one stream, so optimistic concurrency
 * settles races between creates. Each template's content and versions live in its own stream.
 */
export const templateNamesStream = (workspaceId: string) => `ws-${workspaceId}.templates`;
