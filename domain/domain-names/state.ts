import type { DomainNameEvent, NameUse } from './events.ts';

export interface NameHolder {
  use: NameUse;
  workspaceId: string;
  domainId: string;
  reservedAt: string;
}

export interface DomainNameState {
  holder: NameHolder | null;
}

export const domainNameAggregate = {
  initialState: { holder: null } as DomainNameState,
  evolve(state: DomainNameState, event: DomainNameEvent): DomainNameState {
    switch (event.type) {
      case 'DomainNameReserved': {
        const { use, workspaceId, domainId, reservedAt } = event.data;
        return { holder: { use, workspaceId, domainId, reservedAt } };
      }
      case 'DomainNameReleased':
        return state.holder?.domainId === event.data.domainId ? { holder: null } : state;
    }
  },
};
