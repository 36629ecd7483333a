import t from 'tap';
import type { Lookup } from '../../domain/domains/check.ts';
import {
  decideAddDomain,
  decideDeleteDomain,
  decideRecordDomainCheck,
  decideRotateDkimKey,
  decideSetDomainHost,
  decideUpdateDomainSettings,
  domainHostOrFail,
  domainLookups,
  domainNameOrFail,
  type DomainAnswer,
} from '../../domain/domains/decide.ts';
import { DomainSettingsUpdated, type DomainEvent } from '../../domain/domains/events.ts';
import { EventRegistry } from '../../domain/shared/events.ts';
import { recheckOnRead, settled } from '../../domain/domains/rechecks.ts';
import { requiredRecords, type MailHosts } from '../../domain/domains/records.ts';
import { domainAggregate, type DomainState } from '../../domain/domains/state.ts';
import {
  decideReleaseDomainName,
  decideReserveDomainName,
  UNUSED_RESERVATION_MS,
} from '../../domain/domain-names/decide.ts';
import type { DomainNameEvent } from '../../domain/domain-names/events.ts';
import { domainNameAggregate } from '../../domain/domain-names/state.ts';
import { refusal } from '../support/refusal.ts';

const NOW = '2026-03-10T12:00:00.000Z';
const LATER = '2026-03-10T12:05:00.000Z';
const HOSTS: MailHosts = {
  mx: 'mx.mail.test',
  spfInclude: 'spf.mail.test',
  returnPath: 'bounces.mail.test',
  tracking: 'track.mail.test',
  storage: 'files.mail.test',
};
const ID = '6f1c2a7e-1111-4222-8333-944455556666';

const given = (events: DomainEvent[]): DomainState =>
  events.reduce(domainAggregate.evolve, domainAggregate.initialState);
const added: DomainEvent = {
  type: 'DomainAdded',
  data: {
    domainId: ID,
    domain: 'example.com',
    dkim: { keyId: 'dkim_1', selector: 'wms202603', publicKey: 'KEY1' },
    createdAt: NOW,
  },
};

/** DNS as a map of `TYPE name` to an answer; every lookup not in it is NXDOMAIN. */
function answers(state: DomainState, zone: Record<string, Lookup<unknown>>): DomainAnswer[] {
  return domainLookups(state, HOSTS).map((l) => ({
    ...l,
    answer: zone[`${l.type} ${l.name}`] ?? { status: 'missing' },
  }));
}
const found = (...records: unknown[]): Lookup<unknown> => ({ status: 'found', records });
const servfail: Lookup<unknown> = { status: 'failed', reason: 'servfail' };

/** Everything a state asks for published as we ask (the waiting key's record when one waits). */
function publishedFor(state: DomainState): Record<string, Lookup<unknown>> {
  const key = state.pendingDkim ?? state.dkim!;
  const zone: Record<string, Lookup<unknown>> = {};
  const setup = {
    domain: state.domain,
    hosts: HOSTS,
    dkim: { selector: key.selector, publicKey: key.publicKey },
    trackingHost: state.hosts.tracking.host,
    storageHost: state.hosts.storage.host,
  };
  for (const r of requiredRecords(setup)) {
    const k = `${r.type} ${r.name}`;
    const value = r.type === 'MX' ? { exchange: r.value, priority: r.priority } : r.value;
    const prior = zone[k]?.status === 'found' ? (zone[k] as { records: unknown[] }).records : [];
    zone[k] = found(...prior, value);
  }
  return zone;
}

const check = (state: DomainState, zone: Record<string, Lookup<unknown>>, now = LATER) =>
  decideRecordDomainCheck(state, { answers: answers(state, zone), hosts: HOSTS, trigger: 'request', now });
const types = (events: { type: string }[]) => events.map((e) => e.type);
const checked = (events: DomainEvent[]) =>
  events.find((e) => e.type === 'DomainChecked') as Extract<DomainEvent, { type: 'DomainChecked' }>;

t.test('names: lower-cased, punycode, and 422 on `domain` for IPs, bare suffixes and junk', async (t) => {
  t.equal(domainNameOrFail('  Example.COM. '), 'example.com');
  t.equal(domainNameOrFail('bücher.de'), 'xn--bcher-kva.de');
  for (const bad of ['co.uk', 'github.io', '192.168.0.1', '[::1]', 'example', 'exa mple.com', 'x.local', '']) {
    const r = refusal(() => domainNameOrFail(bad));
    t.equal(r.code, 'invalid_parameter', bad);
    t.equal(r.param, 'domain');
  }
});

t.test('add: the first key under the selector of the month; a repeat on the stream writes nothing', async (t) => {
  const events = decideAddDomain(given([]), {
    domainId: ID,
    domain: 'example.com',
    dkim: { keyId: 'dkim_1', publicKey: 'KEY1' },
    now: NOW,
  });
  t.same(types(events), ['DomainAdded']);
  t.match(events[0]!.data, { dkim: { keyId: 'dkim_1', selector: 'wms202603', publicKey: 'KEY1' } });
  t.same(
    decideAddDomain(given(events), { domainId: ID, domain: 'example.com', dkim: { keyId: 'k', publicKey: 'K' }, now }),
    [],
  );
  const state = given(events);
  t.match(state, {
    sendingStatus: 'pending',
    hosts: { tracking: { host: null, status: 'not_configured' } },
    settings: { catchAll: false },
  });
});
const now = NOW;

t.test('settings: omitted stay, no change writes nothing; a deleted or unknown domain is 404', async (t) => {
  const state = given([added]);
  t.same(decideUpdateDomainSettings(state, { settings: { catchAll: false }, now }), []);
  const events = decideUpdateDomainSettings(state, { settings: { catchAll: true, senderName: 'Acme' }, now });
  t.match(events, [{ type: 'DomainSettingsUpdated', data: { catchAll: true, senderName: 'Acme', dmarcPolicy: null } }]);
  t.equal(refusal(() => decideUpdateDomainSettings(given([]), { settings: {}, now })).code, 'resource_not_found');
  const deleted = given([added, ...decideDeleteDomain(state, { now })]);
  t.equal(refusal(() => decideDeleteDomain(deleted, { now })).code, 'resource_not_found');
  t.equal(refusal(() => check(deleted, {})).code, 'resource_not_found');
});

t.test('catch-all time zone: UTC until set, kept in the settings; an event of before it reads UTC', async (t) => {
  const state = given([added]);
  t.equal(state.settings.catchAllTimeZone, 'UTC');
  t.same(decideUpdateDomainSettings(state, { settings: { catchAllTimeZone: 'UTC' }, now }), [], 'the default again');
  const events = decideUpdateDomainSettings(state, { settings: { catchAllTimeZone: 'Asia/Tokyo' }, now });
  t.match(events, [{ type: 'DomainSettingsUpdated', data: { catchAll: false, catchAllTimeZone: 'Asia/Tokyo' } }]);
  const zoned = given([added, ...events]);
  t.equal(zoned.settings.catchAllTimeZone, 'Asia/Tokyo');
  t.match(decideUpdateDomainSettings(zoned, { settings: { catchAll: true }, now }), [
    { type: 'DomainSettingsUpdated', data: { catchAll: true, catchAllTimeZone: 'Asia/Tokyo' } },
  ]);
  const v1 = { domainId: ID, catchAll: true, dmarcPolicy: null, senderName: null, logo: null, updatedAt: NOW };
  t.same(new EventRegistry([DomainSettingsUpdated]).decode('DomainSettingsUpdated', 1, v1).data, {
    ...v1,
    catchAllTimeZone: 'UTC',
  });
});

t.test('hosts: a name under the domain, not the domain itself nor its return path', async (t) => {
  t.equal(domainHostOrFail('example.com', 'tracking', 'Links.Example.com'), 'links.example.com');
  for (const [bad, why] of <[string, string][]>[
    ['example.com', 'the domain itself'],
    ['links.other.com', 'outside'],
    ['bounces.example.com', 'the return path'],
    ['notexample.com', 'a suffix match is not a subdomain'],
    ['li nks.example.com', 'junk'],
  ]) {
    const r = refusal(() => domainHostOrFail('example.com', 'storage', bad));
    t.same([r.code, r.param], ['invalid_parameter', 'storage.host'], why);
  }
  const state = given([added]);
  const set = decideSetDomainHost(state, { kind: 'tracking', host: 'links.example.com', now });
  t.match(set, [{ type: 'DomainHostSet', data: { kind: 'tracking', host: 'links.example.com' } }]);
  t.match(given([added, ...set]).hosts.tracking, { host: 'links.example.com', status: 'pending' });
  t.same(decideSetDomainHost(given([added, ...set]), { kind: 'tracking', host: 'links.example.com', now }), []);
  t.match(
    given([added, ...set, ...decideSetDomainHost(given([added, ...set]), { kind: 'tracking', host: null, now })]),
    {
      hosts: { tracking: { host: null, status: 'not_configured' } },
    },
  );
});

t.test(
  'given every record published, when checked, then verified once: the webhook transition fires once',
  async (t) => {
    const state = given([added]);
    const first = check(state, publishedFor(state));
    t.same(types(first), ['DomainChecked', 'DomainVerified']);
    t.match(first[1]!.data, { receiving: true, sending: true, domain: 'example.com' });
    t.match(checked(first).data, {
      receiving: { verifiedAt: LATER, error: null },
      sending: { status: 'verified', error: null },
      dmarc: { stage: 'monitoring' },
    });
    t.same(
      checked(first).data.records.map((r) => `${r.purpose} ${r.status}`),
      ['receiving found', 'spf found', 'dkim found', 'dmarc found', 'return_path found'],
    );
    const after = given([added, ...first]);
    t.ok(after.everVerified);
    const second = check(after, publishedFor(after), '2026-03-10T13:00:00.000Z');
    t.same(types(second), ['DomainChecked'], 'no second domain.verified');
    t.equal(checked(second).data.receiving.verifiedAt, LATER, 'verifiedAt stays when it was');
  },
);

t.test('DNS failing is no verdict: status unknown, verifiedAt kept, and no transition either way', async (t) => {
  const verified = given([added, ...check(given([added]), publishedFor(given([added])))]);
  const zone = Object.fromEntries(Object.keys(publishedFor(verified)).map((k) => [k, servfail]));
  const blip = check(verified, zone, '2026-03-10T13:00:00.000Z');
  t.same(types(blip), ['DomainChecked']);
  t.match(checked(blip).data, { sending: { status: 'unknown' }, receiving: { verifiedAt: LATER } });
  t.ok(checked(blip).data.records.every((r) => r.status === null));
  const back = given([added, ...check(given([added]), publishedFor(given([added]))), ...blip]);
  t.same(
    types(check(back, publishedFor(back), '2026-03-10T14:00:00.000Z')),
    ['DomainChecked'],
    'back to verified: no new event',
  );
});

t.test('another key at our selector: sending failed (domain.failed once); MX gone clears verifiedAt', async (t) => {
  const verified = given([added, ...check(given([added]), publishedFor(given([added])))]);
  const zone: Record<string, Lookup<unknown>> = {
    ...publishedFor(verified),
    'TXT wms202603._domainkey.example.com': found('v=DKIM1; k=rsa; p=OTHER'),
  };
  delete zone['MX example.com'];
  const events = check(verified, zone, '2026-03-10T13:00:00.000Z');
  t.same(types(events), ['DomainChecked', 'DomainVerificationFailed']);
  t.match(events[1]!.data, { domain: 'example.com', error: /another key/ });
  t.match(checked(events).data, {
    receiving: { verifiedAt: null, error: /No MX record/ },
    sending: { status: 'failed' },
  });
  const failed = given([added, ...check(given([added]), publishedFor(given([added]))), ...events]);
  t.same(types(check(failed, zone, '2026-03-10T14:00:00.000Z')), ['DomainChecked'], 'still failed: no second event');
});

t.test('hosts through checks: pending until found, active, failed when it goes; unknown keeps', async (t) => {
  const withHost = given([
    added,
    ...decideSetDomainHost(given([added]), { kind: 'tracking', host: 'links.example.com', now }),
  ]);
  const zone = publishedFor(withHost);
  t.equal(zone['CNAME links.example.com']?.status, 'found', 'the tracking record is among what a domain publishes');
  const { 'CNAME links.example.com': _, ...without } = zone;
  t.match(checked(check(withHost, without)).data.tracking, { status: 'pending', error: /No CNAME record/ });
  const active = given([
    added,
    ...decideSetDomainHost(given([added]), { kind: 'tracking', host: 'links.example.com', now }),
    ...check(withHost, zone),
  ]);
  t.same(active.hosts.tracking, { host: 'links.example.com', status: 'active', error: null });
  t.match(checked(check(active, without)).data.tracking, { status: 'failed' }, 'an active host whose record went');
  t.match(checked(check(active, { ...zone, 'CNAME links.example.com': servfail })).data.tracking, { status: 'active' });
  t.match(checked(check(active, { ...zone, 'CNAME links.example.com': found('elsewhere.test') })).data.tracking, {
    status: 'failed',
    error: /elsewhere.test/,
  });
  t.notOk(settled(checked(check(withHost, without)).data), 'a pending host is not settled');
  t.ok(settled(checked(check(withHost, zone)).data));
});

t.test('an answer for a name the domain no longer uses counts as unchecked', async (t) => {
  const withHost = given([
    added,
    ...decideSetDomainHost(given([added]), { kind: 'tracking', host: 'links.example.com', now }),
  ]);
  const stale = answers(withHost, publishedFor(withHost));
  const moved = given([
    added,
    ...decideSetDomainHost(given([added]), { kind: 'tracking', host: 'links.example.com', now }),
    ...decideSetDomainHost(withHost, { kind: 'tracking', host: 'go.example.com', now }),
  ]);
  const events = decideRecordDomainCheck(moved, { answers: stale, hosts: HOSTS, trigger: 'schedule', now: LATER });
  const tracking = checked(events).data.records.find((r) => r.purpose === 'tracking')!;
  t.same([tracking.name, tracking.status], ['go.example.com', null]);
  t.match(checked(events).data.tracking, { status: 'pending' });
});

t.test('rotation: a new selector waits beside the signing key, which decides sending until found', async (t) => {
  const verified = [added, ...check(given([added]), publishedFor(given([added])))];
  const rotated = decideRotateDkimKey(given(verified), { keyId: 'dkim_2', publicKey: 'KEY2', now });
  t.match(rotated, [{ type: 'DomainDkimKeyRotated', data: { dkim: { keyId: 'dkim_2', selector: 'wms202603-2' } } }]);
  const waiting = given([...verified, ...rotated]);
  t.same(
    domainLookups(waiting, HOSTS)
      .filter((l) => l.name.includes('_domainkey'))
      .map((l) => `${l.key} ${l.name}`),
    ['dkim wms202603-2._domainkey.example.com', 'signing_dkim wms202603._domainkey.example.com'],
  );
  // The old record is still out, the new one not yet: records say what to publish; sending stays verified.
  const old = publishedFor(given(verified));
  const notYet = check(waiting, old, '2026-03-10T13:00:00.000Z');
  t.same(types(notYet), ['DomainChecked']);
  t.match(checked(notYet).data, { sending: { status: 'verified' } });
  t.equal(checked(notYet).data.records.find((r) => r.purpose === 'dkim')?.status, 'missing');
  // Published: the new key signs.
  const out = check(waiting, { ...old, ...publishedFor(waiting) }, '2026-03-10T14:00:00.000Z');
  t.same(types(out), ['DomainDkimKeyActivated', 'DomainChecked']);
  t.match(out[0]!.data, { keyId: 'dkim_2', previousKeyId: 'dkim_1' });
  const after = given([...verified, ...rotated, ...out]);
  t.same([after.dkim?.keyId, after.pendingDkim], ['dkim_2', null]);
  // Rotating twice in a month: -3, and a rotation while one waits replaces the waiting key.
  const again = decideRotateDkimKey(waiting, { keyId: 'dkim_3', publicKey: 'KEY3', now });
  t.match(given([...verified, ...rotated, ...again]).pendingDkim, { keyId: 'dkim_3', selector: 'wms202603-3' });
});

t.test('the read re-check: unverified and last checked over 20 s ago', async (t) => {
  const base = { receivingVerified: false, sendingStatus: 'pending' as const };
  t.ok(recheckOnRead({ ...base, lastCheckedAt: null }, NOW), 'never checked');
  t.notOk(recheckOnRead({ ...base, lastCheckedAt: '2026-03-10T11:59:40.000Z' }, NOW), '20 s exactly');
  t.ok(recheckOnRead({ ...base, lastCheckedAt: '2026-03-10T11:59:39.999Z' }, NOW));
  t.notOk(
    recheckOnRead(
      { receivingVerified: true, sendingStatus: 'verified', lastCheckedAt: '2026-01-01T00:00:00.000Z' },
      NOW,
    ),
    'a verified domain is not re-checked by reads',
  );
  t.ok(recheckOnRead({ receivingVerified: true, sendingStatus: 'unknown', lastCheckedAt: null }, NOW));
});

const givenName = (events: DomainNameEvent[]) =>
  events.reduce(domainNameAggregate.evolve, domainNameAggregate.initialState);
const reserve = (events: DomainNameEvent[], over: Partial<Parameters<typeof decideReserveDomainName>[1]> = {}) =>
  decideReserveDomainName(givenName(events), {
    name: 'example.com',
    use: 'domain',
    workspaceId: 'ws_b',
    domainId: 'd_b',
    now: NOW,
    holder: null,
    ...over,
  });
const heldByA: DomainNameEvent = {
  type: 'DomainNameReserved',
  data: { name: 'example.com', use: 'domain', workspaceId: 'ws_a', domainId: 'd_a', reservedAt: NOW },
};

t.test('names across the service: one holder; 409 by use; a deleted or stalled holder gives way', async (t) => {
  t.match(reserve([]), [{ type: 'DomainNameReserved', data: { workspaceId: 'ws_b', domainId: 'd_b' } }]);
  t.same(reserve([heldByA], { workspaceId: 'ws_a', domainId: 'd_a' }), [], 'held for this domain already');
  const other = refusal(() => reserve([heldByA]));
  t.same([other.code, other.param], ['domain_in_use', 'domain']);
  t.match(other.message, /another workspace/);
  t.match(refusal(() => reserve([heldByA], { workspaceId: 'ws_a' })).message, /a domain of this workspace already/);
  t.same(
    [
      refusal(() => reserve([heldByA], { use: 'tracking' })).code,
      refusal(() => reserve([heldByA], { use: 'tracking' })).param,
    ],
    ['tracking_host_in_use', 'tracking.host'],
  );
  t.equal(refusal(() => reserve([heldByA], { use: 'storage' })).code, 'storage_host_in_use');

  const deleted = { domainId: 'd_a', deleted: true, uses: false };
  t.same(reserve([heldByA], { holder: deleted }).length, 1, 'a deleted holder gives way at once');
  t.equal(
    refusal(() => reserve([heldByA], { holder: { ...deleted, domainId: 'd_other' } })).code,
    'domain_in_use',
    'a standing of another domain says nothing about this holder',
  );
  const stalled = { domainId: 'd_a', deleted: false, uses: false };
  t.equal(
    refusal(() => reserve([heldByA], { holder: stalled })).code,
    'domain_in_use',
    'just reserved: its writer is on its way',
  );
  const past = new Date(Date.parse(NOW) + UNUSED_RESERVATION_MS + 1).toISOString();
  t.same(reserve([heldByA], { holder: stalled, now: past }).length, 1, 'unused past the grace: abandoned');
  t.equal(
    refusal(() => reserve([heldByA], { holder: { ...stalled, uses: true }, now: past })).code,
    'domain_in_use',
    'a holder using it keeps it for ever',
  );

  t.same(
    decideReleaseDomainName(givenName([heldByA]), { name: 'example.com', use: 'domain', domainId: 'd_b', now }),
    [],
  );
  const released = decideReleaseDomainName(givenName([heldByA]), {
    name: 'example.com',
    use: 'domain',
    domainId: 'd_a',
    now,
  });
  t.same(types(released), ['DomainNameReleased']);
  t.same(reserve([heldByA, ...released]).length, 1, 'free again');
});
