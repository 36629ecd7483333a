import { z } from 'zod';
import { defineEvent, type EventOf } from '../shared/events.ts';

export const ENGINES = ['blocks', 'html'] as const;
export type Engine = (typeof ENGINES)[number];

/**
 * The content of one version. The document, slots and props were validated against the rules of
 * the day they were saved; the event keeps them as loose JSON so a rule tightened later never
 * makes an old event unreadable (history and rebuilds replay every version ever saved).
 */
const content = {
  engine: z.enum(ENGINES),
  subject: z.string(),
  document: z.record(z.string(), z.unknown()).nullable(),
  html: z.string().nullable(),
  slots: z.array(z.record(z.string(), z.unknown())),
  props: z.array(z.record(z.string(), z.unknown())),
};
export const contentSchema = z.object(content);
export type TemplateContent = z.infer<typeof contentSchema>;

export const TemplateCreated = defineEvent(
  'TemplateCreated',
  z.object({
    templateId: z.string(),
    description: z.string().nullable(),
    starter: z.string().nullable(),
    createdAt: z.string(),
  }),
);

/** A new head version: version 1 at create, after an edit of a published head, or a restore. */
export const TemplateVersionDrafted = defineEvent(
  'TemplateVersionDrafted',
  z.object({
    templateId: z.string(),
    versionId: z.string(),
    version: z.number().int().positive(),
    ...content,
    /** The version whose content this one copies (restore), else null. */
    restoredFrom: z.number().int().positive().nullable(),
    draftedAt: z.string(),
  }),
);

/** The unpublished head version's content replaced (an edit that needs no new version). */
export const TemplateDraftEdited = defineEvent(
  'TemplateDraftEdited',
  z.object({ templateId: z.string(), version: z.number().int().positive(), ...content, editedAt: z.string() }),
);

export const TemplateDescriptionChanged = defineEvent(
  'TemplateDescriptionChanged',
  z.object({ templateId: z.string(), description: z.string().nullable(), changedAt: z.string() }),
);

/** The version is frozen and becomes the one sends use. `sanitisedHtml` is what an html-engine version sends. */
export const TemplateVersionPublished = defineEvent(
  'TemplateVersionPublished',
  z.object({
    templateId: z.string(),
    version: z.number().int().positive(),
    sanitisedHtml: z.string().nullable(),
    publishedAt: z.string(),
  }),
);

export const TemplateArchived = defineEvent(
  'TemplateArchived',
  z.object({ templateId: z.string(), archivedAt: z.string() }),
);
export const TemplateUnarchived = defineEvent(
  'TemplateUnarchived',
  z.object({ templateId: z.string(), unarchivedAt: z.string() }),
);

export const TemplateVersionDeleted = defineEvent(
  'TemplateVersionDeleted',
  z.object({ templateId: z.string(), version: z.number().int().positive(), deletedAt: z.string() }),
);

export const TemplateDeleted = defineEvent(
  'TemplateDeleted',
  z.object({ templateId: z.string(), deletedAt: z.string() }),
);

export const templateEvents = [
  TemplateCreated,
  TemplateVersionDrafted,
  TemplateDraftEdited,
  TemplateDescriptionChanged,
  TemplateVersionPublished,
  TemplateArchived,
  TemplateUnarchived,
  TemplateVersionDeleted,
  TemplateDeleted,
];
export type TemplateEvent =
  | EventOf<typeof TemplateCreated>
  | EventOf<typeof TemplateVersionDrafted>
  | EventOf<typeof TemplateDraftEdited>
  | EventOf<typeof TemplateDescriptionChanged>
  | EventOf<typeof TemplateVersionPublished>
  | EventOf<typeof TemplateArchived>
  | EventOf<typeof TemplateUnarchived>
  | EventOf<typeof TemplateVersionDeleted>
  | EventOf<typeof TemplateDeleted>;

/** One stream per template: every version it ever had is in it. */
export const templateStream = (workspaceId: string, templateId: string) => `ws-${workspaceId}.template-${templateId}`;
