import { DEFAULT_TIME_ZONE } from '../shared/time-zones.ts';
import type { AddressEvent, ForwardStatus } from './events.ts';

export interface ForwardState {
  forwardId: string;
  destination: string;
  status: ForwardStatus;
  enabled: boolean;
  keepCopy: boolean;
  /** The nonce of the consent link that works now; null once answered or when none was needed. */
  nonce: string | null;
  consentRequestedAt: string | null;
}

export interface AddressState {
  addressId: string | null;
  address: string;
  domainId: string;
  deleted: boolean;
  enabled: boolean;
  timeZone: string;
  forwards: Map<string, ForwardState>;
  /** A custom login name; null: the address itself. */
  username: string | null;
  appPasswords: Map<string, { name: string }>;
}

export const initialAddressState: AddressState = {
  addressId: null,
  address: '',
  domainId: '',
  deleted: false,
  enabled: true,
  timeZone: DEFAULT_TIME_ZONE,
  forwards: new Map(),
  username: null,
  appPasswords: new Map(),
};

/** An address that exists and is not deleted: what every command but create acts on. */
export const isLiveAddress = (s: AddressState): boolean => s.addressId !== null && !s.deleted;

const withForward = (s: AddressState, id: string, change: (f: ForwardState) => ForwardState): AddressState => {
  const current = s.forwards.get(id);
  if (!current) return s;
  return { ...s, forwards: new Map(s.forwards).set(id, change(current)) };
};

export const addressAggregate = {
  initialState: initialAddressState,
  evolve(state: AddressState, event: AddressEvent): AddressState {
    switch (event.type) {
      case 'AddressCreated': {
        const d = event.data;
        return {
          ...initialAddressState,
          addressId: d.addressId,
          address: d.address,
          domainId: d.domainId,
          enabled: d.enabled,
        };
      }
      case 'AddressUpdated':
        return { ...state, enabled: event.data.enabled };
      case 'AddressTimeZoneSet':
        return { ...state, timeZone: event.data.timeZone };
      case 'AddressDeleted':
        return { ...state, deleted: true, forwards: new Map(), appPasswords: new Map(), username: null };
      case 'AddressForwardAdded': {
        const d = event.data;
        const forward: ForwardState = {
          forwardId: d.forwardId,
          destination: d.destination,
          status: d.status,
          enabled: true,
          keepCopy: d.keepCopy,
          nonce: d.nonce,
          consentRequestedAt: d.nonce === null ? null : d.addedAt,
        };
        return { ...state, forwards: new Map(state.forwards).set(d.forwardId, forward) };
      }
      case 'AddressForwardUpdated': {
        const { enabled, keepCopy } = event.data;
        return withForward(state, event.data.forwardId, (f) => ({ ...f, enabled, keepCopy }));
      }
      case 'AddressForwardRemoved': {
        const forwards = new Map(state.forwards);
        forwards.delete(event.data.forwardId);
        return { ...state, forwards };
      }
      case 'AddressForwardConsentRequested': {
        const { nonce, requestedAt } = event.data;
        return withForward(state, event.data.forwardId, (f) => ({
          ...f,
          status: 'pending',
          nonce,
          consentRequestedAt: requestedAt,
        }));
      }
      case 'AddressForwardAnswered':
        return withForward(state, event.data.forwardId, (f) => ({ ...f, status: event.data.status, nonce: null }));
      case 'AddressLoginSet':
        return { ...state, username: event.data.username };
      case 'AppPasswordCreated':
        return {
          ...state,
          appPasswords: new Map(state.appPasswords).set(event.data.appPasswordId, { name: event.data.name }),
        };
      case 'AppPasswordRevoked': {
        const appPasswords = new Map(state.appPasswords);
        appPasswords.delete(event.data.appPasswordId);
        return { ...state, appPasswords };
      }
    }
  },
};
