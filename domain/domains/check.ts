import { dmarcCandidates, dmarcReport, parseDmarc, type DmarcReport } from './dmarc.ts';
import { organizationalDomain } from './name.ts';
import { requiredRecords, returnPathName, type CheckKey, type DomainSetup, type RequiredRecord } from './records.ts';

/**
 * What DNS answered for one lookup, in the shape of the DNS port's answers (infra/dns/port.ts),
 * restated here so the domain imports nothing from infra.
 */
export type Lookup<T> =
  | { status: 'found'; records: T[] }
  | { status: 'missing' }
  | { status: 'failed'; reason: string };

export interface MxAnswer {
  exchange: string;
  priority: number;
}

/** The answers to `dnsQueries(setup)`, by key; a key left out was not looked up. */
export interface Observations {
  receiving?: Lookup<MxAnswer>;
  spf?: Lookup<string>;
  dkim?: Lookup<string>;
  dmarc?: Lookup<string>;
  return_path?: Lookup<string>;
  tracking?: Lookup<string>;
  storage?: Lookup<string>;
  organizational_dmarc?: Lookup<string>;
}

/**
 * How one record stands: `found` (what is published satisfies ours), `absent` (nothing of the
 * kind published), `wrong` (something published that does not satisfy ours), `unknown` (DNS did
 * not answer).
 */
export type Verdict = 'found' | 'absent' | 'wrong' | 'unknown';

export interface CheckedRecord extends RequiredRecord {
  /** The spec's field: found, missing, or null when not checked (or DNS did not answer). */
  status: 'found' | 'missing' | null;
  /** null when not looked up. */
  verdict: Verdict | null;
  /** Why it is not found, in a sentence; null when found or unchecked. */
  problem: string | null;
}

export type SendingStatus = 'verified' | 'pending' | 'failed' | 'no_identity' | 'unknown';

export interface DomainCheck {
  records: CheckedRecord[];
  receiving: { verified: boolean; error: string | null };
  sending: { status: SendingStatus; error: string | null };
  dmarc: DmarcReport | null;
}

const host = (name: string) => name.trim().toLowerCase().replace(/\.$/, '');

type Judgement = { verdict: Verdict; problem: string | null };
const found: Judgement = { verdict: 'found', problem: null };

/** Checks what DNS answered against the records the domain needs. */
export function checkDomain(setup: DomainSetup, observations: Observations): DomainCheck {
  const records = requiredRecords(setup).map((record): CheckedRecord => {
    const judgement = judge(record, setup, observations);
    if (!judgement) return { ...record, status: null, verdict: null, problem: null };
    const status = judgement.verdict === 'found' ? 'found' : judgement.verdict === 'unknown' ? null : 'missing';
    return { ...record, status, ...judgement };
  });
  const byPurpose = new Map(records.map((record) => [record.purpose, record]));
  const mx = byPurpose.get('receiving')!;
  const organizational = organizationalDomain(setup.domain);
  const dmarcLookup = observations.dmarc;
  return {
    records,
    receiving: { verified: mx.verdict === 'found', error: mx.verdict === null ? null : mx.problem },
    sending: sending(setup, byPurpose),
    dmarc: dmarcLookup
      ? dmarcReport({
          domain: setup.domain,
          own: dmarcLookup,
          organizational:
            organizational === setup.domain
              ? undefined
              : { domain: organizational, answer: observations.organizational_dmarc ?? { status: 'failed' } },
          dkimFound: byPurpose.get('dkim')?.verdict === 'found',
          returnPathFound: byPurpose.get('return_path')?.verdict === 'found',
          returnPathName: returnPathName(setup.domain),
        })
      : null,
  };
}

function judge(record: RequiredRecord, setup: DomainSetup, observations: Observations): Judgement | null {
  const lookup = observations[record.purpose as CheckKey];
  if (!lookup) return null;
  if (lookup.status === 'failed')
    return {
      verdict: 'unknown',
      problem: `The DNS lookup of ${record.type} ${record.name} failed (${lookup.reason}).`,
    };
  if (lookup.status === 'missing')
    return { verdict: 'absent', problem: `No ${record.type} record at ${record.name} yet.` };
  switch (record.purpose) {
    case 'receiving':
      return judgeMx(record, lookup.records as MxAnswer[]);
    case 'spf':
      return judgeSpf(record, lookup.records as string[], setup.hosts.spfInclude);
    case 'dkim':
      return judgeDkim(record, lookup.records as string[], setup.dkim!.publicKey);
    case 'dmarc':
      return judgeDmarc(record, lookup.records as string[]);
    case 'return_path':
    case 'tracking':
    case 'storage':
      return judgeCname(record, lookup.records as string[]);
  }
}

/** Ours must be among the most preferred exchanges: a better-preferred other host would take the mail. */
function judgeMx(record: RequiredRecord, answers: MxAnswer[]): Judgement {
  const best = Math.min(...answers.map((mx) => mx.priority));
  if (answers.some((mx) => mx.priority === best && host(mx.exchange) === host(record.value))) return found;
  const listed = answers.map((mx) => `${mx.priority} ${host(mx.exchange) || '.'}`).join(', ');
  return {
    verdict: 'wrong',
    problem: `The MX records of ${record.name} (${listed}) do not send mail to ${record.value} first.`,
  };
}

/**
 * One SPF record (RFC 7208 4.5: two or more is a permanent error) that includes ours with a pass
 * qualifier, among whatever else it lists, or redirects to ours. Includes are not followed: an
 * include of a record that includes ours does not count.
 */
function judgeSpf(record: RequiredRecord, txt: string[], include: string): Judgement {
  const spf = txt.filter((value) => /^v=spf1(\s|$)/i.test(value.trim()));
  if (spf.length === 0) return { verdict: 'absent', problem: `No SPF record at ${record.name} yet.` };
  if (spf.length > 1)
    return {
      verdict: 'wrong',
      problem: `${record.name} has ${spf.length} SPF records; receivers treat that as an error. Merge them into one that includes ${include}.`,
    };
  const terms = spf[0]!.trim().split(/\s+/).slice(1);
  const ours = terms.some((term) => {
    const match = /^\+?(include:|redirect=)(.+)$/i.exec(term);
    return match !== null && host(match[2]!) === host(include);
  });
  return ours ? found : { verdict: 'wrong', problem: `The SPF record of ${record.name} does not include ${include}.` };
}

/** RFC 6376 3.6.1: tag=value list; ours when the key is ours and of type rsa. Extra tags are fine. */
function judgeDkim(record: RequiredRecord, txt: string[], publicKey: string): Judgement {
  const ours = (value: string) => {
    const tags = new Map<string, string>();
    for (const part of value.split(';')) {
      const eq = part.indexOf('=');
      if (eq > 0) tags.set(part.slice(0, eq).trim().toLowerCase(), part.slice(eq + 1).replace(/\s/g, ''));
    }
    const version = tags.get('v');
    return (
      (version === undefined || version === 'DKIM1') &&
      (tags.get('k') ?? 'rsa').toLowerCase() === 'rsa' &&
      tags.get('p') === publicKey
    );
  };
  // Several records at one selector leave verifiers to pick one: each must be ours.
  if (txt.every(ours)) return found;
  return { verdict: 'wrong', problem: `${record.name} holds a DKIM record with another key; publish ${record.value}.` };
}

/** Any valid DMARC record counts: its policy is the owner's choice, graded in the dmarc report. */
function judgeDmarc(record: RequiredRecord, txt: string[]): Judgement {
  const candidates = dmarcCandidates(txt);
  if (candidates.length === 0) return { verdict: 'absent', problem: `No DMARC record at ${record.name} yet.` };
  if (candidates.length > 1)
    return {
      verdict: 'wrong',
      problem: `${record.name} holds ${candidates.length} DMARC records; receivers ignore them all.`,
    };
  const parsed = parseDmarc(candidates[0]!);
  return typeof parsed === 'string'
    ? { verdict: 'wrong', problem: `The DMARC record at ${record.name} is not valid: ${parsed}.` }
    : found;
}

function judgeCname(record: RequiredRecord, targets: string[]): Judgement {
  if (targets.some((target) => host(target) === host(record.value))) return found;
  return {
    verdict: 'wrong',
    problem: `${record.name} points to ${targets.map(host).join(', ')}, not ${record.value}.`,
  };
}

/**
 * `verified`: DKIM found, and SPF or the return path found. `failed`: the DKIM record holds
 * another key, or both SPF and the return path are published wrongly. `unknown`: DNS did not
 * answer for what would decide it. `pending`: the rest (something is not published yet).
 * `no_identity`: the domain holds no DKIM key to check.
 */
function sending(setup: DomainSetup, byPurpose: Map<string, CheckedRecord>): DomainCheck['sending'] {
  if (!setup.dkim) return { status: 'no_identity', error: 'The domain has no DKIM key to sign with.' };
  const dkim = byPurpose.get('dkim')!;
  const spf = byPurpose.get('spf')!;
  const returnPath = byPurpose.get('return_path')!;
  const dkimVerdict = dkim.verdict ?? 'unknown';
  const paths = [spf.verdict ?? 'unknown', returnPath.verdict ?? 'unknown'];
  const pathVerdict: Verdict = paths.includes('found')
    ? 'found'
    : paths.includes('unknown')
      ? 'unknown'
      : paths.includes('absent')
        ? 'absent'
        : 'wrong';
  const problems = [
    dkimVerdict === 'found' ? null : dkim.problem,
    pathVerdict === 'found' ? null : spf.problem,
    pathVerdict === 'found' ? null : returnPath.problem,
  ].filter((problem): problem is string => problem !== null);
  const error = problems.length > 0 ? problems.join(' ') : null;
  if (dkimVerdict === 'found' && pathVerdict === 'found') return { status: 'verified', error: null };
  if (dkimVerdict === 'wrong' || pathVerdict === 'wrong') return { status: 'failed', error };
  if (dkimVerdict === 'unknown' || pathVerdict === 'unknown')
    return { status: 'unknown', error: error ?? 'DNS was not checked.' };
  return { status: 'pending', error };
}
