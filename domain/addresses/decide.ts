import { fail } from '../shared/errors.ts';
import type { AddressEvent } from './events.ts';
import { isLiveAddress, type AddressState, type ForwardState } from './state.ts';

/** Ours (the spec names no number): forwards per address. */
export const FORWARDS_MAX = 10;
/** Ours: app passwords per address. */
export const APP_PASSWORDS_MAX = 20;
/** How long a consent link works; a resend makes a new one. */
export const CONSENT_LINK_TTL_MS = 7 * 24 * 60 * 60 * 1000;

function live(state: AddressState): string {
  if (!isLiveAddress(state)) fail('resource_not_found', 'No such address.', 'id');
  return state.addressId!;
}

function forwardOf(state: AddressState, forwardId: string): ForwardState {
  const f = state.forwards.get(forwardId);
  if (!f) fail('resource_not_found', 'No such forward of this address.', 'forwardId');
  return f;
}

export function decideCreateAddress(
  state: AddressState,
  cmd: {
    addressId: string;
    address: string;
    localPart: string;
    domain: string;
    domainId: string;
    enabled: boolean;
    now: string;
  },
): AddressEvent[] {
  if (state.addressId !== null) return [];
  const { now, ...data } = cmd;
  return [{ type: 'AddressCreated', data: { ...data, createdAt: now } }];
}

/**
 * `enabled` is stored and shown; sending and receiving honour it when they exist (see
 * docs/decisions/addresses.md). `timeZone` is an IANA name the caller checked
 * (`canonicalTimeZone`). One decision: each setting that changes is one event.
 */
export function decideUpdateAddress(
  state: AddressState,
  cmd: { enabled?: boolean; timeZone?: string; now: string },
): AddressEvent[] {
  const addressId = live(state);
  const events: AddressEvent[] = [];
  if (cmd.enabled !== undefined && cmd.enabled !== state.enabled)
    events.push({ type: 'AddressUpdated', data: { addressId, enabled: cmd.enabled, updatedAt: cmd.now } });
  if (cmd.timeZone !== undefined && cmd.timeZone !== state.timeZone)
    events.push({ type: 'AddressTimeZoneSet', data: { addressId, timeZone: cmd.timeZone, setAt: cmd.now } });
  return events;
}

export function decideDeleteAddress(state: AddressState, cmd: { now: string }): AddressEvent[] {
  const addressId = live(state);
  return [{ type: 'AddressDeleted', data: { addressId, address: state.address, deletedAt: cmd.now } }];
}

/** The destinations of `destinations` not forwarded to yet, in order, without repeats. */
export function newDestinations(state: AddressState, destinations: string[]): string[] {
  const known = new Set([...state.forwards.values()].map((f) => f.destination));
  return [...new Set(destinations)].filter((d) => !known.has(d));
}

/**
 * Adds forwards. A destination forwarded to already stays as it is (a repeat adds nothing).
 * `inside`: on a domain of the workspace, confirmed at once; anything else waits for consent.
 */
export function decideAddForwards(
  state: AddressState,
  cmd: {
    forwards: { forwardId: string; destination: string; inside: boolean; nonce: string }[];
    keepCopy: boolean;
    now: string;
  },
): AddressEvent[] {
  const addressId = live(state);
  const fresh = new Set(
    newDestinations(
      state,
      cmd.forwards.map((f) => f.destination),
    ),
  );
  cmd.forwards.forEach((f, i) => {
    if (f.destination === state.address)
      fail('invalid_parameter', 'An address cannot forward to itself.', `destinations.${i}`);
  });
  if (state.forwards.size + fresh.size > FORWARDS_MAX)
    fail('workspace_limit_reached', `An address has at most ${FORWARDS_MAX} forwards.`, 'destinations');
  return cmd.forwards
    .filter((f) => fresh.delete(f.destination))
    .map((f) => ({
      type: 'AddressForwardAdded' as const,
      data: {
        addressId,
        forwardId: f.forwardId,
        destination: f.destination,
        status: f.inside ? ('confirmed' as const) : ('pending' as const),
        keepCopy: cmd.keepCopy,
        nonce: f.inside ? null : f.nonce,
        addedAt: cmd.now,
      },
    }));
}

export function decideUpdateForward(
  state: AddressState,
  cmd: { forwardId: string; enabled?: boolean; keepCopy?: boolean; now: string },
): AddressEvent[] {
  const addressId = live(state);
  const f = forwardOf(state, cmd.forwardId);
  const enabled = cmd.enabled ?? f.enabled;
  const keepCopy = cmd.keepCopy ?? f.keepCopy;
  if (enabled === f.enabled && keepCopy === f.keepCopy) return [];
  return [
    {
      type: 'AddressForwardUpdated',
      data: { addressId, forwardId: f.forwardId, enabled, keepCopy, updatedAt: cmd.now },
    },
  ];
}

export function decideRemoveForward(state: AddressState, cmd: { forwardId: string; now: string }): AddressEvent[] {
  const addressId = live(state);
  const f = forwardOf(state, cmd.forwardId);
  return [{ type: 'AddressForwardRemoved', data: { addressId, forwardId: f.forwardId, removedAt: cmd.now } }];
}

/** A new consent link for a forward still waiting or declined; a confirmed one needs none (nothing written). */
export function decideResendForwardConsent(
  state: AddressState,
  cmd: { forwardId: string; nonce: string; now: string },
): AddressEvent[] {
  const addressId = live(state);
  const f = forwardOf(state, cmd.forwardId);
  if (f.status === 'confirmed') return [];
  return [
    {
      type: 'AddressForwardConsentRequested',
      data: { addressId, forwardId: f.forwardId, nonce: cmd.nonce, requestedAt: cmd.now },
    },
  ];
}

/**
 * The destination's answer through the consent link: only the link mailed last works, for
 * `CONSENT_LINK_TTL_MS`, and only once. Anything else is `consent_link_invalid`.
 */
export function decideAnswerForward(
  state: AddressState,
  cmd: { forwardId: string; nonce: string; answer: 'confirmed' | 'declined'; now: string },
): AddressEvent[] {
  const f = isLiveAddress(state) ? state.forwards.get(cmd.forwardId) : undefined;
  const fresh =
    f?.nonce === cmd.nonce &&
    f.consentRequestedAt !== null &&
    Date.parse(cmd.now) - Date.parse(f.consentRequestedAt) <= CONSENT_LINK_TTL_MS;
  if (!f || !fresh) fail('consent_link_invalid', 'This link no longer works: ask the sender for a new one.');
  return [
    {
      type: 'AddressForwardAnswered',
      data: { addressId: state.addressId!, forwardId: f.forwardId, status: cmd.answer, answeredAt: cmd.now },
    },
  ];
}

/**
 * A login name (null: the address itself). Locked while app passwords exist: the clients they were
 * given to log in with the current name (409 `username_locked`; revoke them first).
 */
export function decideSetLogin(state: AddressState, cmd: { username: string | null; now: string }): AddressEvent[] {
  const addressId = live(state);
  if (cmd.username === state.username) return [];
  if (state.appPasswords.size > 0)
    fail(
      'username_locked',
      'The login name cannot change while app passwords exist: the clients using them log in with it. Revoke them first.',
      'username',
    );
  return [{ type: 'AddressLoginSet', data: { addressId, username: cmd.username, setAt: cmd.now } }];
}

export function decideCreateAppPassword(
  state: AddressState,
  cmd: { appPasswordId: string; name: string; passwordHash: string; now: string },
): AddressEvent[] {
  const addressId = live(state);
  if (state.appPasswords.has(cmd.appPasswordId)) return [];
  if (state.appPasswords.size >= APP_PASSWORDS_MAX)
    fail('workspace_limit_reached', `An address has at most ${APP_PASSWORDS_MAX} app passwords.`);
  return [
    {
      type: 'AppPasswordCreated',
      data: {
        addressId,
        appPasswordId: cmd.appPasswordId,
        name: cmd.name,
        passwordHash: cmd.passwordHash,
        createdAt: cmd.now,
      },
    },
  ];
}

export function decideRevokeAppPassword(
  state: AddressState,
  cmd: { appPasswordId: string; now: string },
): AddressEvent[] {
  const addressId = live(state);
  if (!state.appPasswords.has(cmd.appPasswordId))
    fail('resource_not_found', 'No such app password of this address.', 'appPasswordId');
  return [{ type: 'AppPasswordRevoked', data: { addressId, appPasswordId: cmd.appPasswordId, revokedAt: cmd.now } }];
}
