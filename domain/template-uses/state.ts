import type { TemplateUseEvent } from './events.ts';

export interface TemplateUse {
  partition: string;
  broadcastId: string;
  reservedAt: string;
}

export interface TemplateUsesState {
  /** By broadcast id. */
  uses: Map<string, TemplateUse>;
  closed: boolean;
}

export const templateUsesAggregate = {
  initialState: { uses: new Map(), closed: false } as TemplateUsesState,
  evolve(state: TemplateUsesState, event: TemplateUseEvent): TemplateUsesState {
    switch (event.type) {
      case 'TemplateUseReserved': {
        const uses = new Map(state.uses);
        const { partition, broadcastId, reservedAt } = event.data;
        uses.set(broadcastId, { partition, broadcastId, reservedAt });
        return { ...state, uses };
      }
      case 'TemplateUseReleased': {
        const uses = new Map(state.uses);
        uses.delete(event.data.broadcastId);
        return { ...state, uses };
      }
      case 'TemplateUsesClosed':
        return { ...state, closed: true };
      default:
        return state;
    }
  },
};
