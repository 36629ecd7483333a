import { promises as dnsPromises } from 'node:dns';
import net from 'node:net';
import type { Dns, DnsAnswer, DnsFailureReason, MxRecord } from './port.ts';

export interface ResolverOptions {
  /**
   * Servers as `host`, `host:port` or `[v6]:port` (IP addresses, as Node's `setServers` takes
   * them). Absent or empty: the system's servers (`/etc/resolv.conf`).
   */
  servers?: string[];
  /** The most one lookup may take, retries included; then it answers `timeout`. */
  timeoutMs?: number;
  /** How many times a query is sent before the resolver gives up on it. */
  tries?: number;
}

export const DEFAULT_DNS_TIMEOUT_MS = 5000;
const DEFAULT_TRIES = 2;

/** Node's error codes (c-ares underneath) mapped onto the port's answers. */
const FAILURES: Record<string, DnsFailureReason> = {
  ESERVFAIL: 'servfail',
  ETIMEOUT: 'timeout',
  EREFUSED: 'refused',
  ECONNREFUSED: 'unreachable',
};
const MISSING = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * The DNS port over Node's `dns.promises.Resolver` (c-ares): queries go straight to the
 * configured servers (no search domains, no hosts file, no libuv thread pool), and many are in
 * flight at once on one resolver, each settling on its own, so a slow or failing name never holds
 * up the others.
 */
export class NodeDns implements Dns {
  private readonly resolver: dnsPromises.Resolver;
  private readonly timeoutMs: number;

  constructor(options: ResolverOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
    const tries = options.tries ?? DEFAULT_TRIES;
    // c-ares lengthens the wait on each retry; the deadline below bounds the whole lookup.
    this.resolver = new dnsPromises.Resolver({ timeout: Math.max(1, Math.floor(this.timeoutMs / tries)), tries });
    if (options.servers?.length) this.resolver.setServers(options.servers);
  }

  txt(name: string): Promise<DnsAnswer<string>> {
    return this.ask(this.resolver.resolveTxt(name), (records) => records.map((chunks) => chunks.join('')));
  }

  mx(name: string): Promise<DnsAnswer<MxRecord>> {
    return this.ask(this.resolver.resolveMx(name), (records) =>
      records.map(({ exchange, priority }) => ({ exchange, priority })),
    );
  }

  cname(name: string): Promise<DnsAnswer<string>> {
    return this.ask(this.resolver.resolveCname(name), (records) => records);
  }

  a(name: string): Promise<DnsAnswer<string>> {
    return this.ask(this.resolver.resolve4(name), (records) => records);
  }

  aaaa(name: string): Promise<DnsAnswer<string>> {
    return this.ask(this.resolver.resolve6(name), (records) => records);
  }

  private ask<R, T>(query: Promise<R>, shape: (records: R) => T[]): Promise<DnsAnswer<T>> {
    let timer: NodeJS.Timeout | undefined;
    // Past the deadline the query is left to finish on its own: cancel() would end every query
    // of the resolver, not this one.
    const deadline = new Promise<DnsAnswer<T>>((resolve) => {
      timer = setTimeout(() => resolve({ status: 'failed', reason: 'timeout', detail: 'ETIMEOUT' }), this.timeoutMs);
    });
    const answer = query.then(
      (records): DnsAnswer<T> => {
        const shaped = shape(records);
        return shaped.length > 0 ? { status: 'found', records: shaped } : { status: 'missing', nxdomain: false };
      },
      (error: NodeJS.ErrnoException): DnsAnswer<T> => {
        const code = error.code ?? 'UNKNOWN';
        if (MISSING.has(code)) return { status: 'missing', nxdomain: code === 'ENOTFOUND' };
        return { status: 'failed', reason: FAILURES[code] ?? 'error', detail: code };
      },
    );
    return Promise.race([answer, deadline]).finally(() => clearTimeout(timer));
  }
}

/**
 * `DNS_SERVERS`: comma-separated `host`, `host:port`, `[v6]` or `[v6]:port`, hosts as IP
 * addresses. Returns the entries as Node's `setServers` takes them; throws on anything else, so
 * a typo stops the start rather than sending every lookup to the system resolver.
 */
export function parseDnsServers(value: string | undefined): string[] {
  if (value === undefined || value.trim() === '') return [];
  return value.split(',').map((raw) => {
    const entry = raw.trim();
    const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
    const plain = /^([^:]+)(?::(\d+))?$/.exec(entry);
    const host = bracketed?.[1] ?? plain?.[1] ?? (net.isIPv6(entry) ? entry : undefined);
    const port = bracketed?.[2] ?? plain?.[2];
    if (host === undefined || net.isIP(host) === 0)
      throw new Error(`DNS_SERVERS: ${JSON.stringify(entry)} is not an IP address with an optional port`);
    if (port !== undefined && (Number(port) < 1 || Number(port) > 65535))
      throw new Error(`DNS_SERVERS: ${JSON.stringify(entry)} has no valid port`);
    return entry;
  });
}
