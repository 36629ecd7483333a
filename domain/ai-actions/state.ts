import type { AiActionEvent } from './events.ts';

export interface AiActionsState {
  used: number;
}

export const aiActionsAggregate = {
  initialState: { used: 0 } as AiActionsState,
  evolve(_state: AiActionsState, event: AiActionEvent): AiActionsState {
    return { used: event.data.used };
  },
};
