/**
 * The DNS port: what the rest of the service asks of DNS. One adapter (infra/dns/resolver.ts)
 * asks real servers through Node's resolver; tests point it at a DNS server on loopback.
 *
 * Every lookup settles with an answer, never a rejection: records, `missing`, or a failure that
 * says why. `missing` is an authoritative "nothing there" (NXDOMAIN, or the name exists without
 * records of that type); a failure is "DNS did not tell us", and a caller must not read it as
 * absence.
 */

export type DnsFailureReason =
  /** The server answered SERVFAIL (often a broken delegation or DNSSEC failure upstream). */
  | 'servfail'
  /** No answer within the lookup's time. */
  | 'timeout'
  /** The server answered REFUSED. */
  | 'refused'
  /** No server could be contacted at all. */
  | 'unreachable'
  /** Anything else: a malformed answer, an unsupported query, a bad name. */
  | 'error';

export type DnsAnswer<T> =
  | { status: 'found'; records: T[] }
  /**
   * `nxdomain`: true when the name itself does not exist, false when it exists without records
   * of the type (NODATA); absent when the adapter cannot tell. DMARC's test for a name's
   * existence (RFC 9989 A.4, the `np` policy) needs the difference.
   */
  | { status: 'missing'; nxdomain?: boolean }
  /** `detail`: the resolver's own code (e.g. `ESERVFAIL`), for logs and operators. */
  | { status: 'failed'; reason: DnsFailureReason; detail: string };

export interface MxRecord {
  exchange: string;
  priority: number;
}

export interface Dns {
  /** Each TXT record as one string: its character-strings joined without separator (RFC 7208 3.3). */
  txt(name: string): Promise<DnsAnswer<string>>;
  mx(name: string): Promise<DnsAnswer<MxRecord>>;
  /** The CNAME target of `name` itself (not followed further). */
  cname(name: string): Promise<DnsAnswer<string>>;
  a(name: string): Promise<DnsAnswer<string>>;
  aaaa(name: string): Promise<DnsAnswer<string>>;
}

export type DnsRecordType = 'TXT' | 'MX' | 'CNAME' | 'A' | 'AAAA';

/** One lookup by record type, for callers that hold a list of queries. */
export function lookup(dns: Dns, type: DnsRecordType, name: string): Promise<DnsAnswer<string> | DnsAnswer<MxRecord>> {
  switch (type) {
    case 'TXT':
      return dns.txt(name);
    case 'MX':
      return dns.mx(name);
    case 'CNAME':
      return dns.cname(name);
    case 'A':
      return dns.a(name);
    case 'AAAA':
      return dns.aaaa(name);
  }
}
