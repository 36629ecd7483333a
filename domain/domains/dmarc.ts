import type { DmarcPolicy } from './records.ts';

export interface DmarcRecord {
  p: DmarcPolicy;
  /** Policy for subdomains; absent means p applies. */
  sp: DmarcPolicy | null;
  pct: number;
  adkim: 'r' | 's';
  aspf: 'r' | 's';
  rua: string[];
}

export type DmarcStage = 'none' | 'monitoring' | 'quarantine' | 'reject';

export interface DmarcIssue {
  code: string;
  message: string;
}

export interface DmarcReport {
  stage: DmarcStage;
  /** The DMARC record that applies, as published (the organizational domain's when inherited). */
  record: string | null;
  issues: DmarcIssue[];
  /** Whether mail we send for the domain can pass DMARC: DKIM or SPF aligns with the From domain. */
  alignmentPossible: boolean;
  /** What the verdict rests on, in a sentence, when it is not plain. */
  caveat: string | null;
}

const POLICIES: readonly DmarcPolicy[] = ['none', 'quarantine', 'reject'];
const STAGE: Record<DmarcPolicy, DmarcStage> = { none: 'monitoring', quarantine: 'quarantine', reject: 'reject' };

/** TXT records at a `_dmarc` name that are DMARC records at all (RFC 7489 6.6.3: others are ignored). */
export const dmarcCandidates = (txt: readonly string[]) =>
  txt.filter((record) => /^v\s*=\s*DMARC1\s*(;|$)/i.test(record.trim()));

/**
 * RFC 7489 6.3: `tag=value` pairs split on `;`, `v=DMARC1` first, `p` required. Unknown tags are
 * ignored; a tag this service reads with an invalid value makes the record invalid. Returns a
 * reason string for a record receivers would discard.
 */
export function parseDmarc(record: string): DmarcRecord | string {
  const tags = new Map<string, string>();
  const parts = record
    .split(';')
    .map((part) => part.trim())
    .filter((part) => part !== '');
  for (const part of parts) {
    const eq = part.indexOf('=');
    if (eq <= 0) return `"${part}" is not a tag=value pair`;
    const name = part.slice(0, eq).trim().toLowerCase();
    if (!tags.has(name)) tags.set(name, part.slice(eq + 1).trim());
  }
  if (parts[0]?.replace(/\s/g, '') !== 'v=DMARC1') return 'it does not start with v=DMARC1';
  const policy = (tag: string) => {
    const value = tags.get(tag)?.toLowerCase();
    return value === undefined ? null : POLICIES.includes(value as DmarcPolicy) ? (value as DmarcPolicy) : undefined;
  };
  const p = policy('p');
  if (p === null) return 'it has no p tag';
  if (p === undefined) return `p=${tags.get('p')} is not none, quarantine or reject`;
  const sp = policy('sp');
  if (sp === undefined) return `sp=${tags.get('sp')} is not none, quarantine or reject`;
  const pctText = tags.get('pct') ?? '100';
  const pct = /^\d{1,3}$/.test(pctText) ? Number(pctText) : NaN;
  if (!(pct >= 0 && pct <= 100)) return `pct=${pctText} is not a number from 0 to 100`;
  const mode = (tag: string) => {
    const value = (tags.get(tag) ?? 'r').toLowerCase();
    return value === 'r' || value === 's' ? value : undefined;
  };
  const adkim = mode('adkim');
  const aspf = mode('aspf');
  if (!adkim) return `adkim=${tags.get('adkim')} is not r or s`;
  if (!aspf) return `aspf=${tags.get('aspf')} is not r or s`;
  const rua = (tags.get('rua') ?? '')
    .split(',')
    .map((uri) => uri.trim())
    .filter((uri) => uri !== '');
  return { p, sp, pct, adkim, aspf, rua };
}

export interface DmarcInput {
  domain: string;
  /** TXT at `_dmarc.<domain>`, as the lookup answered. */
  own: { status: 'found'; records: string[] } | { status: 'missing' } | { status: 'failed' };
  /** For a subdomain: TXT at `_dmarc.<organizational domain>`; undefined for a registrable domain. */
  organizational?: { domain: string; answer: DmarcInput['own'] };
  /** Our DKIM record is published: we sign with d=<domain>, which aligns in either mode. */
  dkimFound: boolean;
  /** Our return-path CNAME is published: SPF passes for bounces.<domain>, aligned in relaxed mode only. */
  returnPathFound: boolean;
  returnPathName: string;
}

/**
 * Where the domain stands with DMARC, and what keeps it from a full policy. null when DNS did not
 * answer, so nothing can be said.
 */
export function dmarcReport(input: DmarcInput): DmarcReport | null {
  const { own, organizational } = input;
  if (own.status === 'failed') return null;
  const ownRecords = own.status === 'found' ? dmarcCandidates(own.records) : [];
  let applies: { domain: string; records: string[]; inherited: boolean } = {
    domain: input.domain,
    records: ownRecords,
    inherited: false,
  };
  if (ownRecords.length === 0 && organizational) {
    if (organizational.answer.status === 'failed') return null;
    const inherited = organizational.answer.status === 'found' ? dmarcCandidates(organizational.answer.records) : [];
    if (inherited.length > 0) applies = { domain: organizational.domain, records: inherited, inherited: true };
  }

  const issues: DmarcIssue[] = [];
  const caveats: string[] = [];
  if (applies.inherited)
    caveats.push(
      `No DMARC record at _dmarc.${input.domain}; the record of ${applies.domain} applies (its sp tag, or p).`,
    );
  const alignment = (aspf: 'r' | 's') => {
    const spf = input.returnPathFound && aspf === 'r';
    if (!input.dkimFound && !spf) {
      issues.push({
        code: 'no_alignment',
        message: `Neither DKIM nor SPF can align yet: publish the DKIM record${aspf === 'r' ? ` and the return-path CNAME ${input.returnPathName}` : ''}.`,
      });
    } else if (!spf) {
      caveats.push(
        aspf === 's'
          ? `Only DKIM aligns: aspf=s needs the return path to be ${input.domain} itself, and ours is ${input.returnPathName}.`
          : `Only DKIM aligns until the return-path CNAME ${input.returnPathName} is published.`,
      );
    } else if (!input.dkimFound) {
      caveats.push(
        'Only SPF aligns (through the return path, relaxed mode) until the DKIM record is published; forwarded mail will then fail DMARC.',
      );
    }
    return input.dkimFound || spf;
  };
  const report = (stage: DmarcStage, record: string | null, aspf: 'r' | 's'): DmarcReport => {
    const alignmentPossible = alignment(aspf);
    return { stage, record, issues, alignmentPossible, caveat: caveats.length > 0 ? caveats.join(' ') : null };
  };

  if (applies.records.length === 0) {
    issues.push({
      code: 'no_record',
      message: `No DMARC record at _dmarc.${input.domain}: receivers apply no policy, and large mailbox providers expect one from bulk senders.`,
    });
    return report('none', null, 'r');
  }
  if (applies.records.length > 1) {
    issues.push({
      code: 'multiple_records',
      message: `_dmarc.${applies.domain} holds ${applies.records.length} DMARC records; receivers ignore them all.`,
    });
    return report('none', null, 'r');
  }
  const record = applies.records[0]!;
  const parsed = parseDmarc(record);
  if (typeof parsed === 'string') {
    issues.push({
      code: 'invalid_record',
      message: `The DMARC record of ${applies.domain} is not valid: ${parsed}; receivers ignore it.`,
    });
    return report('none', record, 'r');
  }
  const policy = applies.inherited ? (parsed.sp ?? parsed.p) : parsed.p;
  if (policy === 'none')
    issues.push({
      code: 'monitoring_only',
      message:
        'p=none only monitors: mail failing DMARC is still delivered. Move to quarantine once reports show all your mail aligned.',
    });
  else if (parsed.pct < 100)
    issues.push({
      code: 'partial_enforcement',
      message: `pct=${parsed.pct}: the policy applies to ${parsed.pct}% of failing mail only.`,
    });
  if (!applies.inherited && parsed.sp !== null && POLICIES.indexOf(parsed.sp) < POLICIES.indexOf(parsed.p)) {
    issues.push({
      code: 'weaker_subdomain_policy',
      message: `sp=${parsed.sp} is weaker than p=${parsed.p}: subdomains can be spoofed more easily than ${input.domain}.`,
    });
  }
  if (parsed.rua.length === 0)
    issues.push({
      code: 'no_reports',
      message: 'No rua tag: nobody receives aggregate reports, so failures go unseen.',
    });
  for (const uri of parsed.rua) {
    if (!/^mailto:/i.test(uri))
      issues.push({
        code: 'rua_not_mailto',
        message: `rua=${uri} is not a mailto: address; receivers send aggregate reports by mail only.`,
      });
  }
  if (parsed.aspf === 's')
    issues.push({
      code: 'strict_spf_alignment',
      message: `aspf=s: SPF can never align for mail we send, whose return path is ${input.returnPathName}.`,
    });
  return report(STAGE[policy], record, parsed.aspf);
}
