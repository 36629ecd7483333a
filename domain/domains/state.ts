import { DEFAULT_TIME_ZONE } from '../shared/time-zones.ts';
import type { SendingStatus } from './check.ts';
import type { DmarcReport } from './dmarc.ts';
import type { CheckedRecordStatus, DomainEvent, DomainSettings, HostKind, HostStatus } from './events.ts';

export interface DkimKey {
  keyId: string;
  selector: string;
  publicKey: string;
}

export interface HostState {
  host: string | null;
  status: HostStatus;
  error: string | null;
}

/** One domain as its stream tells it. */
export interface DomainState {
  domainId: string | null;
  domain: string;
  deleted: boolean;
  createdAt: string;
  /** The key that signs. */
  dkim: DkimKey | null;
  /** A rotated key waiting for its record to be published; it replaces `dkim` once found. */
  pendingDkim: DkimKey | null;
  /** Every selector the domain has used, so a new key always gets a new name. */
  selectors: string[];
  settings: DomainSettings;
  hosts: Record<HostKind, HostState>;
  lastCheckedAt: string | null;
  receivingVerifiedAt: string | null;
  sendingStatus: SendingStatus;
  /** The last verdict DNS actually gave (`unknown` leaves it); transitions are measured against it. */
  knownSendingStatus: SendingStatus | null;
  /** Sending was verified at some check; an unknown verdict then keeps sending open (sending.ts). */
  everVerified: boolean;
  records: CheckedRecordStatus[];
  dmarc: DmarcReport | null;
}

export const DEFAULT_SETTINGS: DomainSettings = {
  catchAll: false,
  catchAllTimeZone: DEFAULT_TIME_ZONE,
  dmarcPolicy: null,
  senderName: null,
  logo: null,
};
const NO_HOST: HostState = { host: null, status: 'not_configured', error: null };

export const initialDomainState: DomainState = {
  domainId: null,
  domain: '',
  deleted: false,
  createdAt: '',
  dkim: null,
  pendingDkim: null,
  selectors: [],
  settings: DEFAULT_SETTINGS,
  hosts: { tracking: NO_HOST, storage: NO_HOST },
  lastCheckedAt: null,
  receivingVerifiedAt: null,
  sendingStatus: 'pending',
  knownSendingStatus: null,
  everVerified: false,
  records: [],
  dmarc: null,
};

/** A domain that exists and is not deleted: what every command but add acts on. */
export const isLive = (s: DomainState): boolean => s.domainId !== null && !s.deleted;

/** Host statuses as a check leaves them, before the check that sees the host's record. */
const pendingHost = (host: string | null): HostState =>
  host === null ? NO_HOST : { host, status: 'pending', error: null };

export const domainAggregate = {
  initialState: initialDomainState,
  evolve(state: DomainState, event: DomainEvent): DomainState {
    switch (event.type) {
      case 'DomainAdded': {
        const d = event.data;
        return {
          ...initialDomainState,
          domainId: d.domainId,
          domain: d.domain,
          createdAt: d.createdAt,
          dkim: d.dkim,
          selectors: [d.dkim.selector],
        };
      }
      case 'DomainSettingsUpdated': {
        const { catchAll, catchAllTimeZone, dmarcPolicy, senderName, logo } = event.data;
        return { ...state, settings: { catchAll, catchAllTimeZone, dmarcPolicy, senderName, logo } };
      }
      case 'DomainHostSet':
        return { ...state, hosts: { ...state.hosts, [event.data.kind]: pendingHost(event.data.host) } };
      case 'DomainDkimKeyRotated':
        return {
          ...state,
          pendingDkim: event.data.dkim,
          selectors: [...state.selectors, event.data.dkim.selector],
        };
      case 'DomainDkimKeyActivated':
        return state.pendingDkim?.keyId === event.data.keyId
          ? { ...state, dkim: state.pendingDkim, pendingDkim: null }
          : state;
      case 'DomainChecked': {
        const d = event.data;
        return {
          ...state,
          lastCheckedAt: d.checkedAt,
          receivingVerifiedAt: d.receiving.verifiedAt,
          sendingStatus: d.sending.status,
          knownSendingStatus: d.sending.status === 'unknown' ? state.knownSendingStatus : d.sending.status,
          everVerified: state.everVerified || d.sending.status === 'verified',
          records: d.records,
          dmarc: d.dmarc,
          hosts: {
            tracking: { ...state.hosts.tracking, ...d.tracking },
            storage: { ...state.hosts.storage, ...d.storage },
          },
        };
      }
      case 'DomainVerified':
      case 'DomainVerificationFailed':
        return state;
      case 'DomainDeleted':
        return { ...state, deleted: true };
    }
  },
};
