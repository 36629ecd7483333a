import type { Dns, DnsAnswer, MxRecord } from './port.ts';

export interface DnsCacheOptions {
  /** How long an answer is reused (records or `missing`; never a failure). */
  ttlMs?: number;
  /** Names kept at most; the oldest entry goes first. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The DNS port with answers kept for a short while, for delivery: a burst of mail to one domain
 * asks DNS once, not three times per message (Node's resolver keeps no cache, and a caching
 * resolver on the host cannot be assumed). Records and `missing` are kept (a missing AAAA is the
 * usual answer for an MX host); failures are asked again every time, so a server that was
 * failing is retried at once. Concurrent lookups of one name share one query. Domain checks use
 * the port without this cache, so a check always sees DNS as it is.
 */
export class CachedDns implements Dns {
  readonly #dns: Dns;
  readonly #ttlMs: number;
  readonly #maxEntries: number;
  readonly #now: () => number;
  readonly #entries = new Map<string, { until: number; answer: Promise<DnsAnswer<unknown>> }>();

  constructor(dns: Dns, options: DnsCacheOptions = {}) {
    this.#dns = dns;
    this.#ttlMs = options.ttlMs ?? 60_000;
    this.#maxEntries = options.maxEntries ?? 10_000;
    this.#now = options.now ?? Date.now;
  }

  txt(name: string): Promise<DnsAnswer<string>> {
    return this.#cached('TXT', name, () => this.#dns.txt(name));
  }

  mx(name: string): Promise<DnsAnswer<MxRecord>> {
    return this.#cached('MX', name, () => this.#dns.mx(name));
  }

  cname(name: string): Promise<DnsAnswer<string>> {
    return this.#cached('CNAME', name, () => this.#dns.cname(name));
  }

  a(name: string): Promise<DnsAnswer<string>> {
    return this.#cached('A', name, () => this.#dns.a(name));
  }

  aaaa(name: string): Promise<DnsAnswer<string>> {
    return this.#cached('AAAA', name, () => this.#dns.aaaa(name));
  }

  #cached<T>(type: string, name: string, ask: () => Promise<DnsAnswer<T>>): Promise<DnsAnswer<T>> {
    const key = `${type} ${name.toLowerCase()}`;
    const now = this.#now();
    const entry = this.#entries.get(key);
    if (entry && entry.until > now) return entry.answer as Promise<DnsAnswer<T>>;
    if (entry) this.#entries.delete(key);
    const answer = ask();
    this.#entries.set(key, { until: now + this.#ttlMs, answer });
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
    void answer.then((settled) => {
      if (settled.status === 'failed' && this.#entries.get(key)?.answer === answer) this.#entries.delete(key);
    });
    return answer;
  }
}
