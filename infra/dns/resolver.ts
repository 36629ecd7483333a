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
  private readonly timeoutMs: number;
  private readonly options: { timeout: number; tries: number };
  private readonly servers: string[];

  constructor(options: ResolverOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? DEFAULT_DNS_TIMEOUT_MS;
    const tries = options.tries ?? DEFAULT_TRIES;
    // c-ares lengthens the wait on each retry; the deadline below bounds the whole lookup.
    this.options = { timeout: Math.max(1, Math.floor(this.timeoutMs / tries)), tries };
    this.servers = options.servers ?? [];
  }

  /**
   * A channel of its own for each lookup: c-ares (1.34) shortens a channel's timeouts to what its
   * servers' earlier answers took and drops the answer to an attempt it retried, so on a shared
   * channel one answer slower than the usual failed long before the deadline. A fresh channel
   * waits the configured time. Making one costs about 0.07 ms here; past the deadline it is
   * cancelled, which ends this lookup alone.
   */
  private resolver(): dnsPromises.Resolver {
    const resolver = new dnsPromises.Resolver(this.options);
    if (this.servers.length) resolver.setServers(this.servers);
    return resolver;
  }

  txt(name: string): Promise<DnsAnswer<string>> {
    return this.ask(
      (r) => r.resolveTxt(name),
      (records) => records.map((chunks) => chunks.join('')),
    );
  }

  mx(name: string): Promise<DnsAnswer<MxRecord>> {
    return this.ask(
      (r) => r.resolveMx(name),
      (records) => records.map(({ exchange, priority }) => ({ exchange, priority })),
    );
  }

  cname(name: string): Promise<DnsAnswer<string>> {
    return this.ask(
      (r) => r.resolveCname(name),
      (records) => records,
    );
  }

  a(name: string): Promise<DnsAnswer<string>> {
    return this.ask(
      (r) => r.resolve4(name),
      (records) => records,
    );
  }

  aaaa(name: string): Promise<DnsAnswer<string>> {
    return this.ask(
      (r) => r.resolve6(name),
      (records) => records,
    );
  }

  private ask<R, T>(
    lookup: (resolver: dnsPromises.Resolver) => Promise<R>,
    shape: (records: R) => T[],
  ): Promise<DnsAnswer<T>> {
    const resolver = this.resolver();
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<DnsAnswer<T>>((resolve) => {
      timer = setTimeout(() => {
        resolver.cancel();
        resolve({ status: 'failed', reason: 'timeout', detail: 'ETIMEOUT' });
      }, this.timeoutMs);
    });
    const answer = lookup(resolver).then(
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
