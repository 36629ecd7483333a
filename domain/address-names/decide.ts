import { isReservedLocalPart } from '../addresses/address.ts';
import { fail } from '../shared/errors.ts';
import type { AddressNameEvent } from './events.ts';
import type { AddressNamesState } from './state.ts';

/** The spec's soft limit of addresses per workspace. */
export const ADDRESSES_MAX = 1000;

/**
 * Registers an address for a workspace. Refused: a reserved local part (409 `address_reserved`),
 * a domain deleted meanwhile (422 `unknown_domain`), an address another of the workspace's holds
 * (409 `address_unavailable`), the 1,000th address already there (422 `workspace_limit_reached`).
 * The same id registered already: nothing to write.
 */
export function decideRegisterAddress(
  state: AddressNamesState,
  cmd: { addressId: string; address: string; localPart: string; domainId: string; now: string },
): AddressNameEvent[] {
  const holder = state.byAddress.get(cmd.address);
  if (holder?.addressId === cmd.addressId) return [];
  if (isReservedLocalPart(cmd.localPart))
    fail('address_reserved', `${cmd.localPart}@ is answered by the service on every domain.`, 'address');
  if (state.closedDomains.has(cmd.domainId)) fail('unknown_domain', 'The domain was deleted.', 'address');
  if (holder) fail('address_unavailable', `${cmd.address} is an address of this workspace already.`, 'address');
  if (state.byAddress.size >= ADDRESSES_MAX)
    fail('workspace_limit_reached', `A workspace has at most ${ADDRESSES_MAX} addresses.`);
  return [
    {
      type: 'AddressRegistered',
      data: { addressId: cmd.addressId, address: cmd.address, domainId: cmd.domainId, registeredAt: cmd.now },
    },
  ];
}

/** Frees the address, if this id holds it. */
export function decideUnregisterAddress(
  state: AddressNamesState,
  cmd: { addressId: string; address: string; now: string },
): AddressNameEvent[] {
  if (state.byAddress.get(cmd.address)?.addressId !== cmd.addressId) return [];
  return [
    { type: 'AddressUnregistered', data: { addressId: cmd.addressId, address: cmd.address, unregisteredAt: cmd.now } },
  ];
}

/**
 * Before a domain is deleted: refused (409 `domain_has_addresses`) while any address is on it,
 * else closed for good, so a create racing the deletion cannot land on it afterwards.
 */
export function decideCloseDomainAddresses(
  state: AddressNamesState,
  cmd: { domainId: string; now: string },
): AddressNameEvent[] {
  if (state.closedDomains.has(cmd.domainId)) return [];
  const on = [...state.byAddress.values()].filter((a) => a.domainId === cmd.domainId).length;
  if (on > 0)
    fail(
      'domain_has_addresses',
      `The domain has ${on} address${on === 1 ? '' : 'es'}; delete ${on === 1 ? 'it' : 'them'} first.`,
    );
  return [{ type: 'AddressDomainClosed', data: { domainId: cmd.domainId, closedAt: cmd.now } }];
}
