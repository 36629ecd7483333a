import { organizationalDomain } from './name.ts';

/** The hosts of this service that a domain's records point at (configuration, see infra/config.ts). */
export interface MailHosts {
  /** Receives the domain's mail: the target of its MX. */
  mx: string;
  /** Its SPF record lists our sending addresses: domains include it. */
  spfInclude: string;
  /** The target of the domain's return-path CNAME; it carries our SPF record and MX for bounces. */
  returnPath: string;
  /** The target of the domain's tracking host CNAME (links and the open pixel). */
  tracking: string;
  /** The target of the domain's storage host CNAME (download links of files). */
  storage: string;
}

/** The public half of the domain's DKIM key: its selector and base64 SubjectPublicKeyInfo. */
export interface DkimPublicKey {
  selector: string;
  publicKey: string;
}

export type DmarcPolicy = 'none' | 'quarantine' | 'reject';

export interface DomainSetup {
  domain: string;
  hosts: MailHosts;
  /** null: the domain holds no DKIM key (sending then has `no_identity`). */
  dkim: DkimPublicKey | null;
  /** The policy our recommended DMARC record carries; `none` (monitor first) when not chosen. */
  dmarcPolicy?: DmarcPolicy | null;
  /** The domain's own host for links and the open pixel; absent or null: ours is used, no record. */
  trackingHost?: string | null;
  /** The domain's own host for download links; absent or null: ours is used, no record. */
  storageHost?: string | null;
}

export type RecordPurpose = 'receiving' | 'spf' | 'dkim' | 'dmarc' | 'return_path' | 'tracking' | 'storage';

export interface RequiredRecord {
  type: 'MX' | 'TXT' | 'CNAME';
  name: string;
  value: string;
  /** MX only; null for the others. */
  priority: number | null;
  purpose: RecordPurpose;
}

export const MX_PRIORITY = 10;

/** Where a domain's return path (envelope sender) lives: a subdomain, so its SPF aligns in relaxed mode. */
export const returnPathName = (domain: string) => `bounces.${domain}`;
/** The domain whose return path `host` is (lower case, a trailing dot dropped), or null when it is none. */
export function domainOfReturnPath(host: string): string | null {
  const name = host.toLowerCase().replace(/\.$/, '');
  return name.startsWith('bounces.') && name.length > 'bounces.'.length ? name.slice('bounces.'.length) : null;
}
export const dkimName = (selector: string, domain: string) => `${selector}._domainkey.${domain}`;
export const dmarcName = (domain: string) => `_dmarc.${domain}`;

/** The records a domain publishes to receive and send through us, in the order they are shown. */
export function requiredRecords(setup: DomainSetup): RequiredRecord[] {
  const { domain, hosts, dkim } = setup;
  const records: RequiredRecord[] = [
    { type: 'MX', name: domain, value: hosts.mx, priority: MX_PRIORITY, purpose: 'receiving' },
    { type: 'TXT', name: domain, value: `v=spf1 include:${hosts.spfInclude} ~all`, priority: null, purpose: 'spf' },
  ];
  if (dkim)
    records.push({
      type: 'TXT',
      name: dkimName(dkim.selector, domain),
      value: `v=DKIM1; k=rsa; p=${dkim.publicKey}`,
      priority: null,
      purpose: 'dkim',
    });
  // Reports go to postmaster, the one address every mail domain must accept (RFC 5321 4.5.1).
  records.push(
    {
      type: 'TXT',
      name: dmarcName(domain),
      value: `v=DMARC1; p=${setup.dmarcPolicy ?? 'none'}; rua=mailto:postmaster@${domain}`,
      priority: null,
      purpose: 'dmarc',
    },
    { type: 'CNAME', name: returnPathName(domain), value: hosts.returnPath, priority: null, purpose: 'return_path' },
  );
  if (setup.trackingHost)
    records.push({
      type: 'CNAME',
      name: setup.trackingHost,
      value: hosts.tracking,
      priority: null,
      purpose: 'tracking',
    });
  if (setup.storageHost)
    records.push({ type: 'CNAME', name: setup.storageHost, value: hosts.storage, priority: null, purpose: 'storage' });
  return records;
}

export type CheckKey = RecordPurpose | 'organizational_dmarc';

export interface DnsQuery {
  key: CheckKey;
  type: 'MX' | 'TXT' | 'CNAME';
  name: string;
}

/**
 * The lookups a check needs: one per required record, and the organizational domain's DMARC
 * record for a subdomain (it applies when the subdomain publishes none).
 */
export function dnsQueries(setup: DomainSetup): DnsQuery[] {
  const queries: DnsQuery[] = requiredRecords(setup).map(({ purpose, type, name }) => ({ key: purpose, type, name }));
  const organizational = organizationalDomain(setup.domain);
  if (organizational !== setup.domain)
    queries.push({ key: 'organizational_dmarc', type: 'TXT', name: dmarcName(organizational) });
  return queries;
}
