import type { Readable } from 'node:stream';
import { authenticate, type DNSResolver } from 'mailauth';
import {
  type Authentication,
  authResult,
  DMARC_POLICIES,
  type DmarcPolicyValue,
} from '../../domain/messages/authentication.ts';
import type { Dns, DnsAnswer } from '../dns/port.ts';

/**
 * An error as Node's resolver throws it, which is what mailauth reads. Without a stack: mailauth
 * reads only the code, and every message asks for two DMARC records that do not exist (the
 * organisational domain's and its suffix's), whose stacks were most of this adapter's CPU.
 */
function dnsError(code: string, name: string): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return Object.assign(new Error(`${code} ${name}`), { code, hostname: name });
  } finally {
    Error.stackTraceLimit = limit;
  }
}

function answered<T, U>(answer: DnsAnswer<T>, name: string, shape: (records: T[]) => U[]): U[] {
  if (answer.status === 'found') return shape(answer.records);
  if (answer.status === 'missing') throw dnsError(answer.nxdomain === false ? 'ENODATA' : 'ENOTFOUND', name);
  throw dnsError(answer.detail || 'ESERVFAIL', name);
}

/**
 * mailauth's resolver (Node's `dns.resolve` shape: TXT as arrays of strings, errors with Node's
 * codes) over our DNS port, so SPF, DKIM, DMARC and ARC ask the servers `DNS_SERVERS` names and
 * tests ask the loopback server. PTR is not in the port: SPF's `ptr` mechanism and `%{p}` macro,
 * which RFC 7208 5.5 asks domains not to use, find no name and so do not match.
 */
export function mailauthResolver(dns: Dns): DNSResolver {
  const resolve = async (name: string, type: string): Promise<unknown[]> => {
    switch (type.toUpperCase()) {
      case 'TXT':
        return answered(await dns.txt(name), name, (records) => records.map((record) => [record]));
      case 'MX':
        return answered(await dns.mx(name), name, (records) => records);
      case 'A':
        return answered(await dns.a(name), name, (records) => records);
      case 'AAAA':
        return answered(await dns.aaaa(name), name, (records) => records);
      case 'CNAME':
        return answered(await dns.cname(name), name, (records) => records);
      default:
        throw dnsError('ENOTIMP', name);
    }
  };
  // mailauth's type names string answers only; its MX lookups take Node's `{exchange, priority}`.
  return resolve as DNSResolver;
}

export interface AuthenticationInput {
  /** The connecting client's address. */
  ip: string;
  helo: string;
  /** MAIL FROM; empty for the null sender (SPF then checks the HELO name). */
  mailFrom: string;
  /** Our name, the authserv-id of the Authentication-Results header. */
  hostname: string;
}

/**
 * SPF, DKIM, DMARC and ARC for one arriving message with mailauth, through the DNS port, as the
 * result object kept on the message. BIMI is not asked for (no logos are shown). Keys shorter
 * than 1024 bits fail (mailauth's default, RFC 8301).
 */
export async function authenticateMessage(
  dns: Dns,
  message: Buffer | Readable,
  input: AuthenticationInput,
): Promise<Authentication> {
  const result = await authenticate(message, {
    ip: input.ip,
    helo: input.helo || undefined,
    sender: input.mailFrom || undefined,
    mta: input.hostname,
    resolver: mailauthResolver(dns),
    disableBimi: true,
    // Received lines written by others are claims; our own envelope is what we saw.
    trustReceived: false,
  });
  const dmarc = result.dmarc || null;
  // mailauth's `policy` is the one that applies: p, or sp/np when inherited, a level lower for t=y.
  const policy = dmarc ? dmarc.policy : null;
  const arcInstance = result.arc ? Number(result.arc.i) || 0 : 0;
  return {
    spf: {
      result: authResult(result.spf ? result.spf.status.result : 'none'),
      domain: result.spf ? result.spf.domain : null,
    },
    dkim: (result.dkim.results ?? [])
      .filter((row) => row.status.result !== 'none')
      .map((row) => ({
        result: authResult(row.status.result),
        domain: row.signingDomain ?? null,
        selector: row.selector ?? null,
        aligned: Boolean(row.status.aligned),
        comment: row.status.comment ?? null,
      })),
    dmarc: dmarc
      ? {
          result: authResult(dmarc.status.result),
          fromDomain: dmarc.status.header?.from ?? dmarc.domain,
          policy: (DMARC_POLICIES as readonly string[]).includes(policy ?? '') ? (policy as DmarcPolicyValue) : null,
          testing: Boolean(dmarc.testMode),
        }
      : null,
    dmarcSkipped: dmarc ? null : ((result as { dmarcSkipReason?: string }).dmarcSkipReason ?? null),
    arc: { result: authResult(result.arc ? result.arc.status.result : 'none'), instance: arcInstance },
    header: result.headers
      .split(/\r\n(?=\S)/)
      .find((line) => line.startsWith('Authentication-Results:'))!
      .slice('Authentication-Results:'.length)
      .trim(),
  };
}
