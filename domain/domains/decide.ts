import { fail } from '../shared/errors.ts';
import { checkDomain, type CheckedRecord, type Lookup, type Observations } from './check.ts';
import type { DomainEvent, DomainSettings, HostKind } from './events.ts';
import { checkDomainName } from './name.ts';
import { dkimName, dnsQueries, returnPathName, type DnsQuery, type DomainSetup, type MailHosts } from './records.ts';
import { nextDkimSelector } from './selector.ts';
import { isLive, type DkimKey, type DomainState, type HostState } from './state.ts';

const notFound = (): never => fail('resource_not_found', 'No such domain.', 'id');

function live(state: DomainState): DomainState & { domainId: string; dkim: DkimKey } {
  if (!isLive(state) || !state.dkim) notFound();
  return state as DomainState & { domainId: string; dkim: DkimKey };
}

/** The name as stored (lower-case, punycode), or 422 on `domain` saying what is wrong with it. */
export function domainNameOrFail(input: string): string {
  const checked = checkDomainName(input);
  if (!checked.ok) fail('invalid_parameter', `\`domain\`: ${checked.reason}.`, 'domain');
  return checked.domain;
}

/**
 * A tracking or storage host of the domain: a name under it (`links.example.com` for
 * `example.com`), not the domain itself, whose MX and TXT records a CNAME would displace, and
 * not its return path, which holds our CNAME already. 422 on `<kind>.host` otherwise.
 */
export function domainHostOrFail(domain: string, kind: HostKind, input: string): string {
  const param = `${kind}.host`;
  const checked = checkDomainName(input);
  if (!checked.ok) fail('invalid_parameter', `\`${param}\`: ${checked.reason}.`, param);
  const host = checked.domain;
  if (!host.endsWith(`.${domain}`))
    fail('invalid_parameter', `\`${param}\`: the host must be a name under ${domain}, such as links.${domain}.`, param);
  if (host === returnPathName(domain))
    fail('invalid_parameter', `\`${param}\`: ${host} holds the return-path record already.`, param);
  return host;
}

export function decideAddDomain(
  state: DomainState,
  cmd: { domainId: string; domain: string; dkim: { keyId: string; publicKey: string }; now: string },
): DomainEvent[] {
  if (state.domainId !== null) return [];
  const selector = nextDkimSelector(cmd.now, []);
  return [
    {
      type: 'DomainAdded',
      data: {
        domainId: cmd.domainId,
        domain: cmd.domain,
        dkim: { keyId: cmd.dkim.keyId, selector, publicKey: cmd.dkim.publicKey },
        createdAt: cmd.now,
      },
    },
  ];
}

/** Omitted settings stay; a change that changes nothing writes nothing. */
export function decideUpdateDomainSettings(
  state: DomainState,
  cmd: { settings: Partial<DomainSettings>; now: string },
): DomainEvent[] {
  const s = live(state);
  const next: DomainSettings = { ...s.settings, ...cmd.settings };
  if (JSON.stringify(next) === JSON.stringify(s.settings)) return [];
  return [{ type: 'DomainSettingsUpdated', data: { domainId: s.domainId, ...next, updatedAt: cmd.now } }];
}

/** `host` as `domainHostOrFail` gave it, or null to use ours again. */
export function decideSetDomainHost(
  state: DomainState,
  cmd: { kind: HostKind; host: string | null; now: string },
): DomainEvent[] {
  const s = live(state);
  const host = cmd.host === null ? null : domainHostOrFail(s.domain, cmd.kind, cmd.host);
  if (host === s.hosts[cmd.kind].host) return [];
  return [{ type: 'DomainHostSet', data: { domainId: s.domainId, kind: cmd.kind, host, setAt: cmd.now } }];
}

/**
 * A new key under a new selector, published beside the one that signs; the old one keeps signing
 * until a check finds the new record (no mail goes out signed by a key receivers cannot find).
 * Rotating again before that replaces the waiting key.
 */
export function decideRotateDkimKey(
  state: DomainState,
  cmd: { keyId: string; publicKey: string; now: string },
): DomainEvent[] {
  const s = live(state);
  const selector = nextDkimSelector(cmd.now, s.selectors);
  return [
    {
      type: 'DomainDkimKeyRotated',
      data: {
        domainId: s.domainId,
        dkim: { keyId: cmd.keyId, selector, publicKey: cmd.publicKey },
        rotatedAt: cmd.now,
      },
    },
  ];
}

export function decideDeleteDomain(state: DomainState, cmd: { now: string }): DomainEvent[] {
  const s = live(state);
  return [{ type: 'DomainDeleted', data: { domainId: s.domainId, domain: s.domain, deletedAt: cmd.now } }];
}

/** What the records of the domain are checked against: the key waiting to be published, else the one that signs. */
export function domainSetup(state: DomainState, hosts: MailHosts, key = state.pendingDkim ?? state.dkim): DomainSetup {
  return {
    domain: state.domain,
    hosts,
    dkim: key ? { selector: key.selector, publicKey: key.publicKey } : null,
    dmarcPolicy: state.settings.dmarcPolicy,
    trackingHost: state.hosts.tracking.host,
    storageHost: state.hosts.storage.host,
  };
}

/** A lookup a check makes: the record lookups, and the signing key's record while another waits. */
export interface DomainLookup {
  key: DnsQuery['key'] | 'signing_dkim';
  type: DnsQuery['type'];
  name: string;
}

export function domainLookups(state: DomainState, hosts: MailHosts): DomainLookup[] {
  const lookups: DomainLookup[] = dnsQueries(domainSetup(state, hosts));
  if (state.pendingDkim && state.dkim)
    lookups.push({ key: 'signing_dkim', type: 'TXT', name: dkimName(state.dkim.selector, state.domain) });
  return lookups;
}

export interface DomainAnswer extends DomainLookup {
  answer: Lookup<unknown>;
}

/**
 * Records what DNS answered (`answers`, made from `domainLookups` of the state the handler read)
 * and where that leaves the domain. An answer for a name the domain no longer uses (a host or key
 * changed meanwhile) is left out: that record counts as unchecked. Emits the transitions that
 * webhooks carry: receiving or sending verified, sending failed. `unknown` (DNS did not answer)
 * is no transition: the last known verdict is what a change is measured against.
 */
export function decideRecordDomainCheck(
  state: DomainState,
  cmd: { answers: DomainAnswer[]; hosts: MailHosts; trigger: 'request' | 'read' | 'schedule'; now: string },
): DomainEvent[] {
  const s = live(state);
  const wanted = new Map(domainLookups(s, cmd.hosts).map((l) => [l.key, l.name]));
  const observations: Observations & { signing_dkim?: Lookup<string> } = {};
  for (const a of cmd.answers) {
    if (wanted.get(a.key) === a.name) (observations as Record<string, Lookup<unknown>>)[a.key] = a.answer;
  }
  const result = checkDomain(domainSetup(s, cmd.hosts), observations);
  const byPurpose = new Map(result.records.map((r) => [r.purpose, r]));
  const events: DomainEvent[] = [];

  let sending = result.sending;
  const pending = s.pendingDkim;
  if (pending && byPurpose.get('dkim')?.verdict === 'found') {
    events.push({
      type: 'DomainDkimKeyActivated',
      data: { domainId: s.domainId, keyId: pending.keyId, previousKeyId: s.dkim.keyId, activatedAt: cmd.now },
    });
  } else if (pending) {
    // Until the new key's record is out, the key that signs decides whether mail can go.
    sending = checkDomain(domainSetup(s, cmd.hosts, s.dkim), {
      ...observations,
      dkim: observations.signing_dkim,
    }).sending;
  }

  const mx = byPurpose.get('receiving')!;
  const verifiedAt =
    mx.verdict === 'found'
      ? (s.receivingVerifiedAt ?? cmd.now)
      : mx.verdict === 'absent' || mx.verdict === 'wrong'
        ? null
        : s.receivingVerifiedAt;
  events.push({
    type: 'DomainChecked',
    data: {
      domainId: s.domainId,
      trigger: cmd.trigger,
      checkedAt: cmd.now,
      records: result.records.map(({ purpose, name, value, status, problem }) => ({
        purpose,
        name,
        value,
        status,
        problem,
      })),
      receiving: { verifiedAt, error: result.receiving.error },
      sending,
      dmarc: result.dmarc,
      tracking: hostAfterCheck(s.hosts.tracking, byPurpose.get('tracking')),
      storage: hostAfterCheck(s.hosts.storage, byPurpose.get('storage')),
    },
  });

  const known = s.knownSendingStatus;
  const receivingNow = verifiedAt !== null && s.receivingVerifiedAt === null;
  const sendingNow = sending.status === 'verified' && known !== 'verified';
  if (receivingNow || sendingNow) {
    events.push({
      type: 'DomainVerified',
      data: {
        domainId: s.domainId,
        domain: s.domain,
        receiving: receivingNow,
        sending: sendingNow,
        verifiedAt: cmd.now,
      },
    });
  }
  if (sending.status === 'failed' && known !== 'failed') {
    events.push({
      type: 'DomainVerificationFailed',
      data: { domainId: s.domainId, domain: s.domain, error: sending.error, failedAt: cmd.now },
    });
  }
  return events;
}

/**
 * A host's record: found makes it active, another target makes it failed; absent leaves a new
 * host pending and turns one that worked into failed (its links would break); a lookup that did
 * not answer, or none made, leaves the status as it was.
 */
function hostAfterCheck(h: HostState, record: CheckedRecord | undefined): Pick<HostState, 'status' | 'error'> {
  if (h.host === null) return { status: 'not_configured', error: null };
  switch (record?.verdict ?? null) {
    case 'found':
      return { status: 'active', error: null };
    case 'wrong':
      return { status: 'failed', error: record!.problem };
    case 'absent':
      return { status: h.status === 'pending' ? 'pending' : 'failed', error: record!.problem };
    case 'unknown':
      return { status: h.status, error: record!.problem };
    default:
      return { status: h.status, error: h.error };
  }
}
