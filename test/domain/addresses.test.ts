import t from 'tap';
import { refusal } from '../support/refusal.ts';
import { checkAddress, isReservedLocalPart } from '../../domain/addresses/address.ts';
import {
  APP_PASSWORDS_MAX,
  CONSENT_LINK_TTL_MS,
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
  FORWARDS_MAX,
} from '../../domain/addresses/decide.ts';
import type { AddressEvent } from '../../domain/addresses/events.ts';
import { addressAggregate, type AddressState } from '../../domain/addresses/state.ts';
import { canonicalTimeZone } from '../../domain/shared/time-zones.ts';
import {
  ADDRESSES_MAX,
  decideCloseDomainAddresses,
  decideRegisterAddress,
  decideUnregisterAddress,
} from '../../domain/address-names/decide.ts';
import type { AddressNameEvent } from '../../domain/address-names/events.ts';
import { addressNamesAggregate } from '../../domain/address-names/state.ts';
import {
  decideReleaseUsername,
  decideReserveUsername,
  USERNAME_PATTERN,
} from '../../domain/address-usernames/decide.ts';
import type { AddressUsernameEvent } from '../../domain/address-usernames/events.ts';
import { addressUsernameAggregate } from '../../domain/address-usernames/state.ts';
import { ConsentRateLimited, decideAllowConsentMail } from '../../domain/address-consents/decide.ts';
import { CONSENT_MAILS_MAX } from '../../domain/address-consents/state.ts';
import type { AddressConsentEvent } from '../../domain/address-consents/events.ts';
import { addressConsentAggregate } from '../../domain/address-consents/state.ts';

const NOW = '2026-01-01T00:00:00.000Z';
const later = (ms: number) => new Date(Date.parse(NOW) + ms).toISOString();

t.test('address syntax: what a mail server accepts, lower-cased, IDN domains in punycode', async (t) => {
  t.match(checkAddress('  Jane.Doe@Example.COM '), {
    ok: true,
    address: 'jane.doe@example.com',
    localPart: 'jane.doe',
    domain: 'example.com',
  });
  t.match(checkAddress('info@bücher.de'), { ok: true, address: 'info@xn--bcher-kva.de' });
  t.match(checkAddress("o'neil_{x}~#!$%&*/=?^`|-@example.com"), { ok: true });
  t.match(checkAddress(`${'a'.repeat(64)}@example.com`), { ok: true }, '64 characters: the edge');
  for (const bad of [
    'no-at-sign',
    '@example.com',
    `${'a'.repeat(65)}@example.com`,
    'a+tag@example.com',
    '.a@example.com',
    'a.@example.com',
    'a..b@example.com',
    '"quoted"@example.com',
    'a b@example.com',
    'jörg@example.com',
    '*@example.com',
    'a@localhost',
    'a@co.uk',
    'a@1.2.3.4',
    'a@exa_mple.com',
  ]) {
    t.equal(checkAddress(bad).ok, false, bad);
  }
  const of = (e: number) =>
    `${'a'.repeat(64)}@${'b'.repeat(60)}.${'c'.repeat(60)}.${'d'.repeat(60)}.${'e'.repeat(e)}.com`;
  t.equal(of(2).length, 254);
  t.equal(checkAddress(of(2)).ok, true, '254 in all: the edge');
  t.equal(checkAddress(of(3)).ok, false, '255 in all');
  t.ok(isReservedLocalPart('postmaster'));
  t.ok(isReservedLocalPart('abuse'));
  t.notOk(isReservedLocalPart('post.master'));
});

const names = (events: AddressNameEvent[]) =>
  events.reduce(addressNamesAggregate.evolve, addressNamesAggregate.initialState);
const registered = (addressId: string, address: string, domainId = 'd1'): AddressNameEvent => ({
  type: 'AddressRegistered',
  data: { addressId, address, domainId, registeredAt: NOW },
});
const register = (state = names([]), address = 'a@example.com', addressId = 'addr_1', domainId = 'd1') =>
  decideRegisterAddress(state, { addressId, address, localPart: address.split('@')[0]!, domainId, now: NOW });

t.test('registry: one holder per address, reserved names, the 1,000 limit, closed domains', async (t) => {
  t.match(register(), [{ type: 'AddressRegistered', data: { addressId: 'addr_1', address: 'a@example.com' } }]);
  const one = names([registered('addr_1', 'a@example.com')]);
  t.same(register(one), [], 'the same id again: nothing');
  t.match(
    refusal(() => register(one, 'a@example.com', 'addr_2')),
    { code: 'address_unavailable', param: 'address' },
  );
  t.match(
    refusal(() => register(one, 'postmaster@example.com', 'addr_2')),
    {
      code: 'address_reserved',
      param: 'address',
    },
  );
  const full = names(Array.from({ length: ADDRESSES_MAX }, (_, i) => registered(`addr_${i}`, `a${i}@example.com`)));
  t.equal(refusal(() => register(full, 'new@example.com', 'addr_new')).code, 'workspace_limit_reached');
  const oneBelow = names(
    Array.from({ length: ADDRESSES_MAX - 1 }, (_, i) => registered(`addr_${i}`, `a${i}@example.com`)),
  );
  t.equal(register(oneBelow, 'new@example.com', 'addr_new').length, 1, 'the 1,000th is allowed');

  const freed = decideUnregisterAddress(one, { addressId: 'addr_1', address: 'a@example.com', now: NOW });
  t.equal(freed.length, 1);
  t.same(
    decideUnregisterAddress(one, { addressId: 'addr_x', address: 'a@example.com', now: NOW }),
    [],
    'not its holder',
  );
  t.equal(register(names([registered('addr_1', 'a@example.com'), ...freed]), 'a@example.com', 'addr_2').length, 1);

  t.match(
    refusal(() => decideCloseDomainAddresses(one, { domainId: 'd1', now: NOW })),
    {
      code: 'domain_has_addresses',
    },
  );
  const closing = decideCloseDomainAddresses(one, { domainId: 'd2', now: NOW });
  t.match(closing, [{ type: 'AddressDomainClosed', data: { domainId: 'd2' } }]);
  const closed = names([registered('addr_1', 'a@example.com'), ...closing]);
  t.same(decideCloseDomainAddresses(closed, { domainId: 'd2', now: NOW }), [], 'closing twice: nothing');
  t.match(
    refusal(() => register(closed, 'b@other.com', 'addr_2', 'd2')),
    { code: 'unknown_domain' },
  );
});

const given = (events: AddressEvent[]): AddressState =>
  events.reduce(addressAggregate.evolve, addressAggregate.initialState);
const created: AddressEvent = {
  type: 'AddressCreated',
  data: {
    addressId: 'addr_1',
    address: 'a@example.com',
    localPart: 'a',
    domain: 'example.com',
    domainId: 'd1',
    enabled: true,
    createdAt: NOW,
  },
};
const deleted: AddressEvent = {
  type: 'AddressDeleted',
  data: { addressId: 'addr_1', address: 'a@example.com', deletedAt: NOW },
};

t.test('address: create, enable and disable, delete', async (t) => {
  const events = decideCreateAddress(given([]), { ...created.data, now: NOW } as never);
  t.same(events, [created]);
  t.same(decideCreateAddress(given([created]), { ...created.data, now: NOW } as never), [], 'a repeat writes nothing');
  t.same(decideUpdateAddress(given([created]), { enabled: true, now: NOW }), [], 'no change');
  t.match(decideUpdateAddress(given([created]), { enabled: false, now: NOW }), [
    { type: 'AddressUpdated', data: { enabled: false } },
  ]);
  t.match(decideDeleteAddress(given([created]), { now: NOW }), [{ type: 'AddressDeleted' }]);
  t.match(
    refusal(() => decideDeleteAddress(given([created, deleted]), { now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
  t.match(
    refusal(() => decideUpdateAddress(given([]), { enabled: false, now: NOW })),
    { code: 'resource_not_found' },
  );
});

t.test('time zone names: listed IANA zones and UTC, other names of a listed zone answered as listed', async (t) => {
  t.equal(canonicalTimeZone('Asia/Tokyo'), 'Asia/Tokyo');
  t.equal(canonicalTimeZone('UTC'), 'UTC');
  t.equal(canonicalTimeZone('Etc/UTC'), 'UTC');
  t.equal(canonicalTimeZone('asia/tokyo'), 'Asia/Tokyo');
  const kolkata = canonicalTimeZone('Asia/Kolkata');
  t.ok(kolkata === 'Asia/Kolkata' || kolkata === 'Asia/Calcutta', 'a link is the zone its runtime lists');
  for (const bad of ['Mars/Olympus', '', '+09:00', 'Asia/Tokyo ', 'local'])
    t.equal(canonicalTimeZone(bad), null, JSON.stringify(bad));
});

t.test('time zone: UTC until set, one event per setting changed, none when the same', async (t) => {
  t.equal(given([created]).timeZone, 'UTC');
  t.same(decideUpdateAddress(given([created]), { timeZone: 'UTC', now: NOW }), [], 'the default again');
  const set = decideUpdateAddress(given([created]), { timeZone: 'Asia/Tokyo', now: NOW });
  t.same(set, [{ type: 'AddressTimeZoneSet', data: { addressId: 'addr_1', timeZone: 'Asia/Tokyo', setAt: NOW } }]);
  t.equal(given([created, ...set]).timeZone, 'Asia/Tokyo');
  t.same(decideUpdateAddress(given([created, ...set]), { timeZone: 'Asia/Tokyo', now: NOW }), [], 'no change');
  t.match(decideUpdateAddress(given([created, ...set]), { enabled: false, timeZone: 'UTC', now: NOW }), [
    { type: 'AddressUpdated', data: { enabled: false } },
    { type: 'AddressTimeZoneSet', data: { timeZone: 'UTC' } },
  ]);
  t.same(
    given([created, ...set, ...decideUpdateAddress(given([created, ...set]), { enabled: false, now: NOW })]).timeZone,
    'Asia/Tokyo',
    'changing another setting keeps the zone',
  );
  t.match(
    refusal(() => decideUpdateAddress(given([created, deleted]), { timeZone: 'Asia/Tokyo', now: NOW })),
    {
      code: 'resource_not_found',
    },
  );
});

const forward = (destination: string, i = 0, inside = false) => ({
  forwardId: `fwd_${i}`,
  destination,
  inside,
  nonce: `n${i}`,
});

t.test('forwards: pending outside, confirmed inside, repeats add nothing, ten at most', async (t) => {
  const events = decideAddForwards(given([created]), {
    forwards: [forward('x@elsewhere.org', 1), forward('b@example.com', 2, true), forward('x@elsewhere.org', 3)],
    keepCopy: true,
    now: NOW,
  });
  t.match(events, [
    { type: 'AddressForwardAdded', data: { forwardId: 'fwd_1', status: 'pending', nonce: 'n1' } },
    { type: 'AddressForwardAdded', data: { forwardId: 'fwd_2', status: 'confirmed', nonce: null } },
  ]);
  const s = given([created, ...events]);
  t.same(
    decideAddForwards(s, { forwards: [forward('x@elsewhere.org', 9)], keepCopy: true, now: NOW }),
    [],
    'a destination forwarded to already',
  );
  t.match(
    refusal(() => decideAddForwards(s, { forwards: [forward('a@example.com', 9)], keepCopy: true, now: NOW })),
    { code: 'invalid_parameter', param: 'destinations.0' },
  );
  const nine = given([
    created,
    ...decideAddForwards(given([created]), {
      forwards: Array.from({ length: FORWARDS_MAX - 1 }, (_, i) => forward(`f${i}@elsewhere.org`, i)),
      keepCopy: false,
      now: NOW,
    }),
  ]);
  t.equal(
    decideAddForwards(nine, { forwards: [forward('last@elsewhere.org', 20)], keepCopy: true, now: NOW }).length,
    1,
    'the tenth',
  );
  t.match(
    refusal(() =>
      decideAddForwards(nine, {
        forwards: [forward('y@elsewhere.org', 20), forward('z@elsewhere.org', 21)],
        keepCopy: true,
        now: NOW,
      }),
    ),
    { code: 'workspace_limit_reached', param: 'destinations' },
  );

  t.match(decideUpdateForward(s, { forwardId: 'fwd_1', enabled: false, now: NOW }), [
    { type: 'AddressForwardUpdated', data: { enabled: false, keepCopy: true } },
  ]);
  t.same(decideUpdateForward(s, { forwardId: 'fwd_1', keepCopy: true, now: NOW }), []);
  t.match(
    refusal(() => decideUpdateForward(s, { forwardId: 'fwd_x', now: NOW })),
    {
      code: 'resource_not_found',
      param: 'forwardId',
    },
  );
  t.match(decideRemoveForward(s, { forwardId: 'fwd_2', now: NOW }), [{ type: 'AddressForwardRemoved' }]);
});

t.test('consent: only the latest link, for seven days, once; resend renews it', async (t) => {
  const s = given([
    created,
    ...decideAddForwards(given([created]), { forwards: [forward('x@elsewhere.org', 1)], keepCopy: true, now: NOW }),
  ]);
  const answer = (state: AddressState, nonce: string, at = NOW, answer: 'confirmed' | 'declined' = 'confirmed') =>
    decideAnswerForward(state, { forwardId: 'fwd_1', nonce, answer, now: at });
  t.match(answer(s, 'n1'), [{ type: 'AddressForwardAnswered', data: { status: 'confirmed' } }]);
  t.match(
    refusal(() => answer(s, 'other')),
    { code: 'consent_link_invalid' },
  );
  t.match(
    refusal(() => answer(s, 'n1', later(CONSENT_LINK_TTL_MS + 1))),
    { code: 'consent_link_invalid' },
  );
  t.equal(answer(s, 'n1', later(CONSENT_LINK_TTL_MS)).length, 1, 'the last moment of the week');
  const answered = addressAggregate.evolve(s, answer(s, 'n1')[0]!);
  t.match(
    refusal(() => answer(answered, 'n1')),
    { code: 'consent_link_invalid' },
    'a link works once',
  );
  t.same(decideResendForwardConsent(answered, { forwardId: 'fwd_1', nonce: 'n2', now: NOW }), [], 'confirmed: none');

  const declined = addressAggregate.evolve(s, answer(s, 'n1', NOW, 'declined')[0]!);
  t.equal(declined.forwards.get('fwd_1')!.status, 'declined');
  const resent = decideResendForwardConsent(declined, { forwardId: 'fwd_1', nonce: 'n2', now: later(1000) });
  t.match(resent, [{ type: 'AddressForwardConsentRequested', data: { nonce: 'n2' } }]);
  const again = addressAggregate.evolve(declined, resent[0]!);
  t.equal(again.forwards.get('fwd_1')!.status, 'pending');
  t.match(
    refusal(() => answer(again, 'n1')),
    { code: 'consent_link_invalid' },
    'the old link stopped working',
  );
  t.equal(answer(again, 'n2', later(2000)).length, 1);
  t.match(
    refusal(() => answer(given([created, deleted]), 'n1')),
    { code: 'consent_link_invalid' },
  );
});

t.test('login and app passwords: the name locked while passwords exist; twenty at most', async (t) => {
  const s = given([created]);
  t.match(decideSetLogin(s, { username: 'jane', now: NOW }), [{ type: 'AddressLoginSet', data: { username: 'jane' } }]);
  t.same(decideSetLogin(s, { username: null, now: NOW }), [], 'the address itself already');
  const pw = (i: number): AddressEvent => ({
    type: 'AppPasswordCreated',
    data: { addressId: 'addr_1', appPasswordId: `apw_${i}`, name: `p${i}`, passwordHash: 'h', createdAt: NOW },
  });
  const withPassword = given([created, pw(0)]);
  t.match(
    refusal(() => decideSetLogin(withPassword, { username: 'jane', now: NOW })),
    {
      code: 'username_locked',
      param: 'username',
    },
  );
  t.same(decideSetLogin(withPassword, { username: null, now: NOW }), [], 'the same name is no change');
  const revoked = decideRevokeAppPassword(withPassword, { appPasswordId: 'apw_0', now: NOW });
  t.match(revoked, [{ type: 'AppPasswordRevoked' }]);
  t.equal(decideSetLogin(given([created, pw(0), ...revoked]), { username: 'jane', now: NOW }).length, 1);
  t.match(
    refusal(() => decideRevokeAppPassword(s, { appPasswordId: 'apw_0', now: NOW })),
    {
      code: 'resource_not_found',
      param: 'appPasswordId',
    },
  );

  const make = (state: AddressState, id: string) =>
    decideCreateAppPassword(state, { appPasswordId: id, name: 'x', passwordHash: 'h', now: NOW });
  const almost = given([created, ...Array.from({ length: APP_PASSWORDS_MAX - 1 }, (_, i) => pw(i))]);
  t.equal(make(almost, 'apw_last').length, 1, 'the twentieth');
  const full = given([created, ...Array.from({ length: APP_PASSWORDS_MAX }, (_, i) => pw(i))]);
  t.equal(refusal(() => make(full, 'apw_more')).code, 'workspace_limit_reached');
});

t.test('usernames: one holder service-wide; an abandoned or deleted holder frees it', async (t) => {
  t.ok(USERNAME_PATTERN.test('jane.doe'));
  for (const bad of ['ab', 'Jane', 'a@b', '-jane', 'jane-', 'x'.repeat(65)]) t.notOk(USERNAME_PATTERN.test(bad), bad);
  t.ok(USERNAME_PATTERN.test('x'.repeat(64)));
  const state = (events: AddressUsernameEvent[]) =>
    events.reduce(addressUsernameAggregate.evolve, addressUsernameAggregate.initialState);
  const reserve = (s = state([]), addressId = 'addr_1', now = NOW, holder: never | null = null) =>
    decideReserveUsername(s, { username: 'jane', workspaceId: 'ws_1', addressId, now, holder });
  const held = state(reserve());
  t.same(reserve(held), [], 'the holder again');
  t.match(
    refusal(() => reserve(held, 'addr_2')),
    { code: 'username_taken', param: 'username' },
  );
  t.match(
    refusal(() =>
      decideReserveUsername(held, {
        username: 'jane',
        workspaceId: 'ws_2',
        addressId: 'addr_2',
        now: later(30_000),
        holder: { addressId: 'addr_1', deleted: false, uses: false },
      }),
    ),
    { code: 'username_taken' },
    'not yet abandoned',
  );
  t.equal(
    decideReserveUsername(held, {
      username: 'jane',
      workspaceId: 'ws_2',
      addressId: 'addr_2',
      now: later(61_000),
      holder: { addressId: 'addr_1', deleted: false, uses: false },
    }).length,
    1,
    'abandoned after a minute',
  );
  t.equal(
    decideReserveUsername(held, {
      username: 'jane',
      workspaceId: 'ws_2',
      addressId: 'addr_2',
      now: NOW,
      holder: { addressId: 'addr_1', deleted: true, uses: false },
    }).length,
    1,
    'its address deleted',
  );
  const released = decideReleaseUsername(held, { username: 'jane', addressId: 'addr_1', now: NOW });
  t.equal(released.length, 1);
  t.same(decideReleaseUsername(held, { username: 'jane', addressId: 'addr_2', now: NOW }), []);
  t.equal(reserve(state([...reserve(), ...released]), 'addr_2').length, 1);
});

t.test('consent mails: five per destination in 24 hours, with the wait until the next', async (t) => {
  const state = (events: AddressConsentEvent[]) =>
    events.reduce(addressConsentAggregate.evolve, addressConsentAggregate.initialState);
  const allow = (s: ReturnType<typeof state>, now: string) =>
    decideAllowConsentMail(s, {
      destination: 'x@elsewhere.org',
      workspaceId: 'ws_1',
      forwardId: 'fwd_1',
      now,
      param: null,
    });
  let events: AddressConsentEvent[] = [];
  for (let i = 0; i < CONSENT_MAILS_MAX; i++) events = [...events, ...allow(state(events), later(i * 60_000))];
  t.equal(events.length, CONSENT_MAILS_MAX, 'five go');
  const refused = refusal(() => allow(state(events), later(10 * 60_000)));
  t.ok(refused instanceof ConsentRateLimited);
  t.equal(refused.code, 'forward_consent_rate_limited');
  t.equal((refused as ConsentRateLimited).retryAfterSeconds, 24 * 3600 - 600, 'until the oldest leaves the window');
  t.equal(allow(state(events), later(24 * 3600_000)).length, 1, 'a day after the first');
});
