import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

/**
 * Which broadcasts not yet started use a template, one stream per template of the workspace (not
 * per mode: templates are shared by both). A broadcast's create reserves its use here and its
 * start or cancel releases it; deleting the template closes the stream, which only succeeds with
 * no use reserved. Both are appended with the revision read, so a create and a delete racing on
 * one template cannot both win (`template_in_use` or `template_not_found` for the loser).
 */
export const TemplateUseReserved = defineEvent(
  'TemplateUseReserved',
  z.object({
    templateId: z.string(),
    /** The broadcast's partition (`<workspace>` or `<workspace>.test`) and id. */
    partition: z.string(),
    broadcastId: z.string(),
    reservedAt: z.string(),
  }),
);

export const TemplateUseReleased = defineEvent(
  'TemplateUseReleased',
  z.object({ templateId: z.string(), broadcastId: z.string(), releasedAt: z.string() }),
);

/** The template is being deleted: no broadcast may reserve it any more. */
export const TemplateUsesClosed = defineEvent(
  'TemplateUsesClosed',
  z.object({ templateId: z.string(), closedAt: z.string() }),
);

export const templateUseEvents = [TemplateUseReserved, TemplateUseReleased, TemplateUsesClosed];
export type TemplateUseEvent =
  | EventOf<typeof TemplateUseReserved>
  | EventOf<typeof TemplateUseReleased>
  | EventOf<typeof TemplateUsesClosed>;

export const templateUsesStream = (workspaceId: string, templateId: string) =>
  `ws-${workspaceId}.template-uses-${templateId}`;
