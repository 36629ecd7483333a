import type { UnsubscribeEvent, UnsubscribeSource } from './events.ts';

export interface UnsubscribeEntry {
  unsubscribeId: string;
  email: string;
  audienceId: string | null;
  source: UnsubscribeSource;
  createdAt: string;
}

/** The unsubscribes of one address that hold, by scope: `*` for all, else the audience id. */
export interface UnsubscribeState {
  entries: Record<string, UnsubscribeEntry>;
}

export const scopeOf = (audienceId: string | null) => audienceId ?? '*';

export const unsubscribeAggregate = {
  initialState: { entries: {} } as UnsubscribeState,
  evolve(state: UnsubscribeState, event: UnsubscribeEvent): UnsubscribeState {
    const scope = scopeOf(event.data.audienceId);
    switch (event.type) {
      case 'ContactUnsubscribed': {
        const { contactId: _, ...entry } = event.data;
        return { entries: { ...state.entries, [scope]: entry } };
      }
      case 'UnsubscribeRemoved': {
        const { [scope]: _, ...rest } = state.entries;
        return { entries: rest };
      }
    }
  },
};
