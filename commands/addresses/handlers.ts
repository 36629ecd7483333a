import { decideAllowConsentMail } from '../../domain/address-consents/decide.ts';
import { forwardConsentStream } from '../../domain/address-consents/events.ts';
import { addressConsentAggregate } from '../../domain/address-consents/state.ts';
import {
  decideCloseDomainAddresses,
  decideRegisterAddress,
  decideUnregisterAddress,
} from '../../domain/address-names/decide.ts';
import { addressNamesStream, type AddressNameEvent } from '../../domain/address-names/events.ts';
import { addressNamesAggregate, type AddressNamesState } from '../../domain/address-names/state.ts';
import { decideReleaseUsername, decideReserveUsername } from '../../domain/address-usernames/decide.ts';
import { addressUsernameStream } from '../../domain/address-usernames/events.ts';
import { addressUsernameAggregate } from '../../domain/address-usernames/state.ts';
import {
  decideAddForwards,
  decideAnswerForward,
  decideCreateAddress,
  decideCreateAppPassword,
  decideDeleteAddress,
  decideRemoveForward,
  decideResendForwardConsent,
  decideRevokeAppPassword,
  decideSetLogin,
  decideUpdateAddress,
  decideUpdateForward,
  newDestinations,
} from '../../domain/addresses/decide.ts';
import { addressStream, type AddressEvent } from '../../domain/addresses/events.ts';
import { addressAggregate, isLiveAddress, type AddressState } from '../../domain/addresses/state.ts';
import { DomainError } from '../../domain/shared/errors.ts';
import { execute, loadState, type Actor, type CommandContext } from '../execute.ts';
import { newId } from '../ids.ts';
import { consentLinks } from './consent.ts';
import { hashAppPassword, newAppPassword } from './passwords.ts';

const loadAddress = async (ctx: CommandContext, workspaceId: string, addressId: string) =>
  (await loadState(ctx, addressStream(workspaceId, addressId), addressAggregate)).state;

const runAddress = (
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  decide: (s: AddressState) => AddressEvent[],
  options?: { likelyNew?: boolean },
) => execute(ctx, actor, addressStream(actor.workspaceId, addressId), addressAggregate, decide, options);

const runNames = (ctx: CommandContext, actor: Actor, decide: (s: AddressNamesState) => AddressNameEvent[]) =>
  execute(ctx, actor, addressNamesStream(actor.workspaceId), addressNamesAggregate, decide);

export interface NewAddress {
  address: string;
  localPart: string;
  domain: string;
  /** A domain of the actor's workspace (the caller found it by name). */
  domainId: string;
  enabled: boolean;
}

/**
 * Creates an address and answers its id. The registry is asked first without writing, so a
 * refusal costs nothing; the address's own stream is written next, then registered (the address
 * is listed, counted and readable only once registered). A registration that loses a race deletes
 * the address again; one orphaned by a crash between the two writes is never seen.
 */
export async function createAddress(ctx: CommandContext, actor: Actor, input: NewAddress, now: string) {
  const addressId = newId.address();
  const register = { addressId, address: input.address, localPart: input.localPart, domainId: input.domainId, now };
  const names = await loadState(ctx, addressNamesStream(actor.workspaceId), addressNamesAggregate);
  decideRegisterAddress(names.state, register);
  await runAddress(ctx, actor, addressId, (s) => decideCreateAddress(s, { addressId, ...input, now }), {
    likelyNew: true,
  });
  try {
    await runNames(ctx, actor, (s) => decideRegisterAddress(s, register));
  } catch (error) {
    if (error instanceof DomainError) await runAddress(ctx, actor, addressId, (s) => decideDeleteAddress(s, { now }));
    throw error;
  }
  return { addressId };
}

export const updateAddress = (
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  input: { enabled?: boolean; timeZone?: string },
  now: string,
) => runAddress(ctx, actor, addressId, (s) => decideUpdateAddress(s, { ...input, now }));

/**
 * Unregisters first (the address vanishes from every list and read at once), then tombstones its
 * stream (its forwards and app passwords go with it) and lets its custom login name go.
 */
export async function deleteAddress(ctx: CommandContext, actor: Actor, addressId: string, now: string) {
  const state = await loadAddress(ctx, actor.workspaceId, addressId);
  decideDeleteAddress(state, { now });
  await runNames(ctx, actor, (s) => decideUnregisterAddress(s, { addressId, address: state.address, now }));
  const { state: after } = await runAddress(ctx, actor, addressId, (s) => decideDeleteAddress(s, { now }));
  if (state.username !== null) await releaseUsername(ctx, actor, state.username, addressId, now);
  return after;
}

/**
 * Domain deletion asks this first: refused (409 `domain_has_addresses`) while the domain has
 * addresses; afterwards no address can be registered on it, whatever races the deletion.
 */
export const closeDomainAddresses = (ctx: CommandContext, actor: Actor, domainId: string, now: string) =>
  runNames(ctx, actor, (s) => decideCloseDomainAddresses(s, { domainId, now }));

/**
 * A consent mail to `destination` counted against its daily allowance (429
 * `forward_consent_rate_limited` past it, `param` as given). Counted before the forward's own
 * event, which is what the mail process follows: a forward that then fails to be written spent
 * an allowance and mailed nothing, never the other way round.
 */
const allowConsentMail = (
  ctx: CommandContext,
  actor: Actor,
  destination: string,
  forwardId: string,
  now: string,
  param: string | null,
) =>
  execute(ctx, actor, forwardConsentStream(destination), addressConsentAggregate, (s) =>
    decideAllowConsentMail(s, { destination, workspaceId: actor.workspaceId, forwardId, now, param }),
  );

/**
 * Adds forwards to `destinations` (lower-cased addresses, `inside` when on a domain of the
 * workspace: confirmed at once). Outside ones are pending and mailed a consent link. Answers the
 * forward ids of the destinations, new and existing.
 */
export async function addForwards(
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  input: { destinations: { destination: string; inside: boolean }[]; keepCopy: boolean },
  now: string,
) {
  const state = await loadAddress(ctx, actor.workspaceId, addressId);
  const forwards = input.destinations.map((d) => ({
    forwardId: newId.addressForward(),
    ...d,
    nonce: consentLinks.newNonce(),
  }));
  // Refusals of the address's own (missing, itself, the limit) come before any allowance is spent.
  decideAddForwards(state, { forwards, keepCopy: input.keepCopy, now });
  const fresh = new Set(
    newDestinations(
      state,
      forwards.map((f) => f.destination),
    ),
  );
  for (const [i, f] of forwards.entries()) {
    if (!f.inside && fresh.delete(f.destination))
      await allowConsentMail(ctx, actor, f.destination, f.forwardId, now, `destinations.${i}`);
  }
  await runAddress(ctx, actor, addressId, (s) => decideAddForwards(s, { forwards, keepCopy: input.keepCopy, now }));
}

export const updateForward = (
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  input: { forwardId: string; enabled?: boolean; keepCopy?: boolean },
  now: string,
) => runAddress(ctx, actor, addressId, (s) => decideUpdateForward(s, { ...input, now }));

export const removeForward = (ctx: CommandContext, actor: Actor, addressId: string, forwardId: string, now: string) =>
  runAddress(ctx, actor, addressId, (s) => decideRemoveForward(s, { forwardId, now }));

/** A new consent link, mailed within the destination's allowance; a confirmed forward needs none. */
export async function resendForwardConsent(
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  forwardId: string,
  now: string,
) {
  const nonce = consentLinks.newNonce();
  const state = await loadAddress(ctx, actor.workspaceId, addressId);
  if (decideResendForwardConsent(state, { forwardId, nonce, now }).length === 0) return;
  await allowConsentMail(ctx, actor, state.forwards.get(forwardId)!.destination, forwardId, now, null);
  await runAddress(ctx, actor, addressId, (s) => decideResendForwardConsent(s, { forwardId, nonce, now }));
}

/** The destination's answer through the consent page; the actor is the service on its behalf. */
export const answerForward = (
  ctx: CommandContext,
  input: { workspaceId: string; addressId: string; forwardId: string; nonce: string; answer: 'confirmed' | 'declined' },
  now: string,
) =>
  runAddress(ctx, { workspaceId: input.workspaceId, kind: 'system', id: null }, input.addressId, (s) =>
    decideAnswerForward(s, { ...input, now }),
  );

/** How a name's holder stands, from its address's own stream. */
async function standingOf(ctx: CommandContext, holder: { workspaceId: string; addressId: string }, username: string) {
  const state = await loadAddress(ctx, holder.workspaceId, holder.addressId);
  return {
    addressId: holder.addressId,
    deleted: state.deleted,
    uses: isLiveAddress(state) && state.username === username,
  };
}

async function releaseUsername(ctx: CommandContext, actor: Actor, username: string, addressId: string, now: string) {
  await execute(ctx, actor, addressUsernameStream(username), addressUsernameAggregate, (s) =>
    decideReleaseUsername(s, { username, addressId, now }),
  );
}

/**
 * Sets the login name (null: the address itself). A custom name is reserved service-wide first
 * (409 `username_taken`), then set on the address (409 `username_locked` while app passwords
 * exist: decided before the reservation too, so a refusal holds nothing), then the old one freed.
 */
export async function setAddressLogin(
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  username: string | null,
  now: string,
) {
  const before = await loadAddress(ctx, actor.workspaceId, addressId);
  if (decideSetLogin(before, { username, now }).length === 0) return;
  if (username !== null) {
    const stream = addressUsernameStream(username);
    const { state } = await loadState(ctx, stream, addressUsernameAggregate);
    const holder =
      state.holder && state.holder.addressId !== addressId ? await standingOf(ctx, state.holder, username) : null;
    await execute(ctx, actor, stream, addressUsernameAggregate, (s) =>
      decideReserveUsername(s, { username, workspaceId: actor.workspaceId, addressId, now, holder }),
    );
  }
  await runAddress(ctx, actor, addressId, (s) => decideSetLogin(s, { username, now }));
  if (before.username !== null && before.username !== username)
    await releaseUsername(ctx, actor, before.username, addressId, now);
}

/** A new app password: answered this once, stored only as its scrypt hash. */
export async function createAppPassword(
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  name: string,
  now: string,
) {
  const appPasswordId = newId.appPassword();
  const password = newAppPassword();
  const passwordHash = await hashAppPassword(password);
  await runAddress(ctx, actor, addressId, (s) =>
    decideCreateAppPassword(s, { appPasswordId, name, passwordHash, now }),
  );
  return { appPasswordId, password };
}

export const revokeAppPassword = (
  ctx: CommandContext,
  actor: Actor,
  addressId: string,
  appPasswordId: string,
  now: string,
) => runAddress(ctx, actor, addressId, (s) => decideRevokeAppPassword(s, { appPasswordId, now }));
