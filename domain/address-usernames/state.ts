import type { AddressUsernameEvent } from './events.ts';

export interface UsernameHolder {
  workspaceId: string;
  addressId: string;
  reservedAt: string;
}

export interface AddressUsernameState {
  holder: UsernameHolder | null;
}

export const addressUsernameAggregate = {
  initialState: { holder: null } as AddressUsernameState,
  evolve(state: AddressUsernameState, event: AddressUsernameEvent): AddressUsernameState {
    switch (event.type) {
      case 'AddressUsernameReserved': {
        const { workspaceId, addressId, reservedAt } = event.data;
        return { holder: { workspaceId, addressId, reservedAt } };
      }
      case 'AddressUsernameReleased':
        return state.holder?.addressId === event.data.addressId ? { holder: null } : state;
    }
  },
};
