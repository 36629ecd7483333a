import { fail } from '../shared/errors.ts';
import type { DomainNameEvent, NameUse } from './events.ts';
import type { DomainNameState } from './state.ts';

/**
 * A reservation is written just before the domain stream that uses the name, so a holder not
 * using it yet is either a moment from doing so or was stopped in between (a crash). Past this
 * long it counts as stopped, and the name may be taken.
 */
export const UNUSED_RESERVATION_MS = 60_000;

/** How the holder's domain stands, as its own stream says (read by the command). */
export interface HolderStanding {
  domainId: string;
  deleted: boolean;
  /** The domain uses the name as it was reserved for (its name, or its tracking or storage host). */
  uses: boolean;
}

const TAKEN: Record<NameUse, [code: string, param: string]> = {
  domain: ['domain_in_use', 'domain'],
  tracking: ['tracking_host_in_use', 'tracking.host'],
  storage: ['storage_host_in_use', 'storage.host'],
};

/**
 * Holds `name` for a domain. Free when nobody holds it, or when its holder is deleted, or when the
 * holder has not come to use it within `UNUSED_RESERVATION_MS` (a writer that stopped between the
 * reservation and its domain's event). Held for the same domain and use already: nothing to write.
 */
export function decideReserveDomainName(
  state: DomainNameState,
  cmd: {
    name: string;
    use: NameUse;
    workspaceId: string;
    domainId: string;
    now: string;
    /** The holder's standing, when the command looked; null when it did not (or not for this holder). */
    holder: HolderStanding | null;
  },
): DomainNameEvent[] {
  const h = state.holder;
  if (h && h.domainId === cmd.domainId && h.use === cmd.use) return [];
  if (h) {
    const standing = cmd.holder?.domainId === h.domainId ? cmd.holder : null;
    const abandoned =
      standing !== null &&
      (standing.deleted || (!standing.uses && Date.parse(cmd.now) - Date.parse(h.reservedAt) > UNUSED_RESERVATION_MS));
    if (!abandoned) {
      const [code, param] = TAKEN[cmd.use];
      const where =
        h.use === 'domain'
          ? h.workspaceId === cmd.workspaceId
            ? 'is a domain of this workspace already'
            : 'is a domain of another workspace'
          : `is the ${h.use} host of ${h.workspaceId === cmd.workspaceId ? 'a domain of this workspace' : 'another workspace'}`;
      fail(code, `${cmd.name} ${where}.`, param);
    }
  }
  return [
    {
      type: 'DomainNameReserved',
      data: {
        name: cmd.name,
        use: cmd.use,
        workspaceId: cmd.workspaceId,
        domainId: cmd.domainId,
        reservedAt: cmd.now,
      },
    },
  ];
}

/** Lets the name go, if this domain holds it for this use; otherwise nothing. */
export function decideReleaseDomainName(
  state: DomainNameState,
  cmd: { name: string; use: NameUse; domainId: string; now: string },
): DomainNameEvent[] {
  const h = state.holder;
  if (!h || h.domainId !== cmd.domainId || h.use !== cmd.use) return [];
  return [{ type: 'DomainNameReleased', data: { name: cmd.name, domainId: cmd.domainId, releasedAt: cmd.now } }];
}
