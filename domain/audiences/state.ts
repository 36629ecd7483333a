import type { AudienceEvent } from './events.ts';

export interface Audience {
  audienceId: string;
  name: string;
  description: string | null;
  showOnPreferences: boolean;
  builtin: 'default' | null;
  createdAt: string;
}

export interface AudiencesState {
  audiences: Map<string, Audience>;
  defaultId: string | null;
}

export const audiencesAggregate = {
  initialState: { audiences: new Map(), defaultId: null } as AudiencesState,
  evolve(state: AudiencesState, event: AudienceEvent): AudiencesState {
    const audiences = new Map(state.audiences);
    switch (event.type) {
      case 'AudienceCreated': {
        const { createdAt, ...a } = event.data;
        audiences.set(a.audienceId, { ...a, createdAt });
        return { audiences, defaultId: a.builtin === 'default' ? a.audienceId : state.defaultId };
      }
      case 'AudienceUpdated': {
        const a = audiences.get(event.data.audienceId);
        if (a)
          audiences.set(a.audienceId, {
            ...a,
            name: event.data.name,
            description: event.data.description,
            showOnPreferences: event.data.showOnPreferences,
          });
        return { ...state, audiences };
      }
      case 'AudienceDeleted':
        audiences.delete(event.data.audienceId);
        return { ...state, audiences };
    }
  },
};
