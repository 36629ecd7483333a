import type { AutomationEvent } from './events.ts';
import type { Step, Trigger } from './steps.ts';

export interface AutomationState {
  automationId: string | null;
  name: string;
  status: 'live' | 'paused';
  trigger: Trigger;
  steps: Step[];
  deleted: boolean;
  /** The stream revision this state was built to (-1: no stream): the ETag. */
  revision: number;
}

export const automationAggregate = {
  initialState: {
    automationId: null,
    name: '',
    status: 'paused',
    trigger: { event: '', filters: [] },
    steps: [],
    deleted: false,
    revision: -1,
  } as AutomationState,
  evolve(prior: AutomationState, event: AutomationEvent): AutomationState {
    const state = { ...prior, revision: prior.revision + 1 };
    switch (event.type) {
      case 'AutomationCreated':
        return {
          ...state,
          automationId: event.data.automationId,
          name: event.data.name,
          status: event.data.status,
          trigger: event.data.trigger as Trigger,
          steps: event.data.steps as Step[],
        };
      case 'AutomationUpdated':
        return {
          ...state,
          name: event.data.name,
          trigger: event.data.trigger as Trigger,
          steps: event.data.steps as Step[],
        };
      case 'AutomationPaused':
        return { ...state, status: 'paused' };
      case 'AutomationResumed':
        return { ...state, status: 'live' };
      case 'AutomationDeleted':
        return { ...state, deleted: true };
    }
  },
};
