import type { TemplateNameEvent } from './events.ts';

export interface TemplateNameEntry {
  templateId: string;
  name: string;
  slug: string;
  /** How often the template was renamed: part of its ETag, since a rename is a change too. */
  renames: number;
}

export interface TemplateNamesState {
  entries: Map<string, TemplateNameEntry>;
}

export const templateNamesAggregate = {
  initialState: { entries: new Map() } as TemplateNamesState,
  evolve(state: TemplateNamesState, event: TemplateNameEvent): TemplateNamesState {
    const entries = new Map(state.entries);
    const d = event.data;
    switch (event.type) {
      case 'TemplateRegistered':
        entries.set(d.templateId, {
          templateId: d.templateId,
          name: event.data.name,
          slug: event.data.slug,
          renames: 0,
        });
        break;
      case 'TemplateRenamed': {
        const entry = entries.get(d.templateId);
        if (entry) entries.set(d.templateId, { ...entry, name: event.data.name, renames: entry.renames + 1 });
        break;
      }
      case 'TemplateUnregistered':
        entries.delete(d.templateId);
        break;
    }
    return { entries };
  },
};
