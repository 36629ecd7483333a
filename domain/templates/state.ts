import type { TemplateContent, TemplateEvent } from './events.ts';

export type TemplateStatus = 'draft' | 'active' | 'archived';

export interface VersionState extends TemplateContent {
  versionId: string;
  version: number;
  published: boolean;
  sanitisedHtml: string | null;
  restoredFrom: number | null;
  createdAt: string;
  publishedAt: string | null;
}

export interface TemplateState {
  templateId: string | null;
  deleted: boolean;
  description: string | null;
  archived: boolean;
  publishedVersion: number | null;
  latestVersion: number;
  /** Versions not deleted, by number. */
  versions: Map<number, VersionState>;
  /** Revision of the stream (-1 before the first event): the template part of its ETag. */
  revision: number;
}

export const initialTemplateState: TemplateState = {
  templateId: null,
  deleted: false,
  description: null,
  archived: false,
  publishedVersion: null,
  latestVersion: 0,
  versions: new Map(),
  revision: -1,
};

/** `draft` until something is published; archiving overrides both. */
export function statusOf(state: Pick<TemplateState, 'archived' | 'publishedVersion'>): TemplateStatus {
  if (state.archived) return 'archived';
  return state.publishedVersion === null ? 'draft' : 'active';
}

export const contentOf = (v: TemplateContent): TemplateContent => ({
  engine: v.engine,
  subject: v.subject,
  document: v.document,
  html: v.html,
  slots: v.slots,
  props: v.props,
});

export const templateAggregate = {
  initialState: initialTemplateState,
  evolve(state: TemplateState, event: TemplateEvent): TemplateState {
    const next: TemplateState = { ...state, revision: state.revision + 1 };
    switch (event.type) {
      case 'TemplateCreated':
        return { ...next, templateId: event.data.templateId, description: event.data.description };
      case 'TemplateVersionDrafted': {
        const d = event.data;
        const versions = new Map(state.versions);
        versions.set(d.version, {
          ...contentOf(d),
          versionId: d.versionId,
          version: d.version,
          published: false,
          sanitisedHtml: null,
          restoredFrom: d.restoredFrom,
          createdAt: d.draftedAt,
          publishedAt: null,
        });
        return { ...next, versions, latestVersion: Math.max(state.latestVersion, d.version) };
      }
      case 'TemplateDraftEdited': {
        const v = state.versions.get(event.data.version);
        if (!v) return next;
        const versions = new Map(state.versions);
        versions.set(v.version, { ...v, ...contentOf(event.data) });
        return { ...next, versions };
      }
      case 'TemplateDescriptionChanged':
        return { ...next, description: event.data.description };
      case 'TemplateVersionPublished': {
        const v = state.versions.get(event.data.version);
        if (!v) return next;
        const versions = new Map(state.versions);
        versions.set(v.version, {
          ...v,
          published: true,
          sanitisedHtml: event.data.sanitisedHtml,
          publishedAt: event.data.publishedAt,
        });
        return { ...next, versions, publishedVersion: v.version };
      }
      case 'TemplateArchived':
        return { ...next, archived: true };
      case 'TemplateUnarchived':
        return { ...next, archived: false };
      case 'TemplateVersionDeleted': {
        const versions = new Map(state.versions);
        versions.delete(event.data.version);
        return { ...next, versions };
      }
      case 'TemplateDeleted':
        return { ...next, deleted: true };
    }
  },
};
