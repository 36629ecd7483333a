import { fail } from '../shared/errors.ts';
import type { AddressUsernameEvent } from './events.ts';
import type { AddressUsernameState } from './state.ts';

/**
 * A custom login name: 3 to 64 of lower-case letters, digits, `.`, `_` and `-`, starting and
 * ending with a letter or digit. Never `@`, so it can never be some address's own login.
 */
export const USERNAME_PATTERN = /^[a-z0-9](?:[a-z0-9._-]{1,62})[a-z0-9]$/;

/**
 * The name is reserved just before the address's own stream takes it, so a holder not using it
 * is a moment from doing so or was stopped in between (a crash). Past this long, it counts as
 * stopped, and the name may be taken.
 */
export const UNUSED_RESERVATION_MS = 60_000;

/** How the holder's address stands, as its own stream says (read by the command). */
export interface UsernameHolderStanding {
  addressId: string;
  deleted: boolean;
  /** The address's login is this name. */
  uses: boolean;
}

/**
 * Holds `username` for an address: free when nobody holds it, when the holder is deleted, or when
 * the holder has not come to use it in time. Taken otherwise (409 `username_taken`).
 */
export function decideReserveUsername(
  state: AddressUsernameState,
  cmd: {
    username: string;
    workspaceId: string;
    addressId: string;
    now: string;
    holder: UsernameHolderStanding | null;
  },
): AddressUsernameEvent[] {
  const h = state.holder;
  if (h?.addressId === cmd.addressId) return [];
  if (h) {
    const standing = cmd.holder?.addressId === h.addressId ? cmd.holder : null;
    const abandoned =
      standing !== null &&
      (standing.deleted || (!standing.uses && Date.parse(cmd.now) - Date.parse(h.reservedAt) > UNUSED_RESERVATION_MS));
    if (!abandoned) fail('username_taken', `The login name ${cmd.username} is taken.`, 'username');
  }
  return [
    {
      type: 'AddressUsernameReserved',
      data: { username: cmd.username, workspaceId: cmd.workspaceId, addressId: cmd.addressId, reservedAt: cmd.now },
    },
  ];
}

export function decideReleaseUsername(
  state: AddressUsernameState,
  cmd: { username: string; addressId: string; now: string },
): AddressUsernameEvent[] {
  if (state.holder?.addressId !== cmd.addressId) return [];
  return [
    {
      type: 'AddressUsernameReleased',
      data: { username: cmd.username, addressId: cmd.addressId, releasedAt: cmd.now },
    },
  ];
}
