import type { AddressNameEvent } from './events.ts';

export interface AddressNamesState {
  /** address → its id and domain. */
  byAddress: Map<string, { addressId: string; domainId: string }>;
  /** Domains deleted or being deleted: nothing is registered on them again (their ids are never reused). */
  closedDomains: Set<string>;
}

export const addressNamesAggregate = {
  initialState: { byAddress: new Map(), closedDomains: new Set() } as AddressNamesState,
  evolve(state: AddressNamesState, event: AddressNameEvent): AddressNamesState {
    switch (event.type) {
      case 'AddressRegistered': {
        const byAddress = new Map(state.byAddress);
        byAddress.set(event.data.address, { addressId: event.data.addressId, domainId: event.data.domainId });
        return { ...state, byAddress };
      }
      case 'AddressUnregistered': {
        if (state.byAddress.get(event.data.address)?.addressId !== event.data.addressId) return state;
        const byAddress = new Map(state.byAddress);
        byAddress.delete(event.data.address);
        return { ...state, byAddress };
      }
      case 'AddressDomainClosed':
        return { ...state, closedDomains: new Set(state.closedDomains).add(event.data.domainId) };
    }
  },
};
