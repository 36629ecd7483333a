import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

/**
 * The SSRF guard for requests to URLs that users give us (webhook receivers). Two layers:
 *
 * 1. `checkReceiverUrl`, at create/update time: the URL's shape, scheme, host name and, for an IP
 *    literal, its address. It answers a reason a client can be shown.
 * 2. `guardedLookup` / `createOutboundAgents`, at connection time: every address a name resolves
 *    to is checked before the socket connects, and an IP literal host is checked before connecting,
 *    so a name that resolved to a public address when it was saved and to an internal one now
 *    (DNS rebinding) still cannot reach inside.
 */

export interface OutboundPolicy {
  /**
   * Development only (`WEBHOOK_ALLOW_PRIVATE=true`, read by the caller): allows `http://` and
   * loopback, private and reserved addresses. Otherwise only `https://` to public addresses.
   */
  allowPrivate: boolean;
}

export const MAX_RECEIVER_URL_LENGTH = 2048;

/** The error code of a connection refused because of where it would go. */
export const BLOCKED_ADDRESS = 'EBLOCKEDADDRESS';

/** Not globally reachable (IANA special-purpose registries), plus multicast and above. */
const BLOCKED_IPV4: readonly [string, number][] = [
  ['0.0.0.0', 8], // "this network"
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast (deprecated)
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, and 255.255.255.255 broadcast
];

const BLOCKED_IPV6: readonly [string, number][] = [
  ['::', 96], // unspecified (::), loopback (::1), deprecated IPv4-compatible (::a.b.c.d)
  ['64:ff9b:1::', 48], // local-use NAT64
  ['100::', 64], // discard-only
  ['2001::', 23], // IETF protocol assignments (Teredo, benchmarking, ORCHID)
  ['2001:db8::', 32], // documentation
  ['3fff::', 20], // documentation
  ['5f00::', 16], // SRv6 SIDs
  ['fc00::', 7], // unique local
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
  // ::ffff:a.b.c.d (IPv4-mapped) needs no rule: BlockList checks it against the IPv4 rules.
  // 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) embed an IPv4 address: that address is checked.
];

const blockList = new net.BlockList();
for (const [prefix, bits] of BLOCKED_IPV4) blockList.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of BLOCKED_IPV6) blockList.addSubnet(prefix, bits, 'ipv6');

/**
 * Whether an IP address (v4, or v6 with or without brackets and zone) is private, loopback,
 * link-local or otherwise reserved. Anything that is not an IP address counts as blocked.
 */
export function isBlockedAddress(address: string): boolean {
  const bare = address.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  const family = net.isIP(bare);
  if (family === 4) return blockList.check(bare, 'ipv4');
  if (family !== 6) return true;
  if (blockList.check(bare, 'ipv6')) return true;
  const embedded = embeddedIpv4(bare);
  return embedded !== undefined && blockList.check(embedded, 'ipv4');
}

const BLOCKED_NAME_SUFFIXES = ['.localhost', '.local', '.internal'];

export function checkReceiverUrl(
  raw: string,
  policy: OutboundPolicy,
): { ok: true; url: URL } | { ok: false; reason: string } {
  if (typeof raw !== 'string' || raw === '') return refuse('the URL is empty');
  if (raw.length > MAX_RECEIVER_URL_LENGTH)
    return refuse(`the URL is longer than ${MAX_RECEIVER_URL_LENGTH} characters`);
  // WHATWG parsing would quietly drop tabs and line breaks and trim spaces: refuse them instead.
  if (/[\0-\x20\x7f]/.test(raw)) return refuse('the URL contains spaces or control characters');
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('not an absolute URL');
  }
  if (url.href.length > MAX_RECEIVER_URL_LENGTH)
    return refuse(`the URL is longer than ${MAX_RECEIVER_URL_LENGTH} characters`);
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:')) {
    return refuse(policy.allowPrivate ? 'the scheme must be https or http' : 'the scheme must be https');
  }
  if (url.username !== '' || url.password !== '' || hasUserinfo(raw))
    return refuse('the URL must not contain credentials (user:pass@)');
  if (policy.allowPrivate) return { ok: true, url };

  // WHATWG has already turned every IPv4 spelling (2130706433, 0x7f.1, 0177.0.0.1, 127.1) into
  // dotted decimal and put IPv6 in brackets, so what is left to check is the canonical form.
  const host = url.hostname;
  if (host.startsWith('[')) {
    return isBlockedAddress(host) ? refuse('the host is a private or reserved IPv6 address') : { ok: true, url };
  }
  if (net.isIPv4(host)) {
    return isBlockedAddress(host) ? refuse('the host is a private or reserved IPv4 address') : { ok: true, url };
  }
  const name = host.replace(/\.$/, '');
  if (name === 'localhost' || BLOCKED_NAME_SUFFIXES.some((suffix) => name.endsWith(suffix))) {
    return refuse('the host name is local (localhost, .local, .internal)');
  }
  // A single label (http://metadata/) is completed by the resolver's search domains: internal.
  if (!name.includes('.')) return refuse('the host name must be a fully qualified domain name');
  return { ok: true, url };
}

/** Takes `dns.lookup`'s place for tests: answers every address of a name. */
export type Resolver = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

const systemResolver: Resolver = (hostname, options, callback) => dns.lookup(hostname, options, callback);

/**
 * A `lookup` for `net.connect`, `http.Agent`/`https.Agent` options or undici's `connect` option:
 * resolves every address of the name and refuses the connection (code `EBLOCKEDADDRESS`, with
 * `hostname` and `address` on the error) when any of them is private or reserved, unless the
 * policy allows private addresses. Supports `all: true` (what Node's happy-eyeballs connect asks
 * for) and the single-address form.
 */
export function guardedLookup(policy: OutboundPolicy, resolve: Resolver = systemResolver): net.LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, options.all ? [] : '');
      if (addresses.length === 0) {
        return callback(
          Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND', hostname }),
          '',
        );
      }
      if (!policy.allowPrivate) {
        const blocked = addresses.find((entry) => isBlockedAddress(entry.address));
        if (blocked) return callback(blockedError(hostname, blocked.address), options.all ? [] : '');
      }
      if (options.all) return callback(null, addresses);
      const [first] = addresses as [dns.LookupAddress];
      callback(null, first.address, first.family);
    });
  };
}

/**
 * Keep-alive agents for webhook delivery whose connections pass the guard: names through
 * `guardedLookup`, IP literal hosts (which Node connects to without a lookup) checked directly.
 * Redirects are not the agents' business: the caller must not follow them blindly.
 */
export function createOutboundAgents(
  policy: OutboundPolicy,
  resolve: Resolver = systemResolver,
): { http: http.Agent; https: https.Agent } {
  const lookup = guardedLookup(policy, resolve);
  const options = { keepAlive: true, lookup };

  class GuardedHttpAgent extends http.Agent {
    override createConnection(
      ...args: Parameters<http.Agent['createConnection']>
    ): ReturnType<http.Agent['createConnection']> {
      const [connectOptions, callback] = args;
      const refusal = literalRefusal(connectOptions.host ?? connectOptions.hostname, policy);
      if (!refusal) return super.createConnection(...args);
      process.nextTick(() => callback?.(refusal, undefined as never));
      return undefined;
    }
  }
  class GuardedHttpsAgent extends https.Agent {
    override createConnection(
      ...args: Parameters<https.Agent['createConnection']>
    ): ReturnType<https.Agent['createConnection']> {
      const [connectOptions, callback] = args;
      const refusal = literalRefusal(connectOptions.host ?? connectOptions.hostname, policy);
      if (!refusal) return super.createConnection(...args);
      process.nextTick(() => callback?.(refusal, undefined as never));
      return undefined;
    }
  }
  return { http: new GuardedHttpAgent(options), https: new GuardedHttpsAgent(options) };
}

function literalRefusal(host: string | null | undefined, policy: OutboundPolicy): Error | undefined {
  if (policy.allowPrivate || !host) return undefined;
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (net.isIP(bare.replace(/%.*$/, '')) === 0) return undefined;
  return isBlockedAddress(bare) ? blockedError(host, bare) : undefined;
}

function blockedError(hostname: string, address: string): Error {
  return Object.assign(new Error(`connect ${BLOCKED_ADDRESS} ${hostname}: a private or reserved address`), {
    code: BLOCKED_ADDRESS,
    hostname,
    address,
  });
}

function refuse(reason: string): { ok: false; reason: string } {
  return { ok: false, reason };
}

/** WHATWG drops an empty userinfo (`https://@host/`, `https://:@host/`): the raw text still had one. */
function hasUserinfo(raw: string): boolean {
  const afterScheme = raw.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '');
  const authority = afterScheme.split(/[/?#\\]/, 1)[0] ?? '';
  return authority.includes('@');
}

/** The IPv4 address inside a NAT64 (64:ff9b::/96) or 6to4 (2002::/16) IPv6 address. */
function embeddedIpv4(address: string): string | undefined {
  const groups = ipv6Groups(address);
  if (!groups) return undefined;
  const quad = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  if (groups[0] === 0x64 && groups[1] === 0xff9b && groups.slice(2, 6).every((group) => group === 0)) {
    return quad(groups[6] ?? 0, groups[7] ?? 0);
  }
  if (groups[0] === 0x2002) return quad(groups[1] ?? 0, groups[2] ?? 0);
  return undefined;
}

/** The eight 16-bit groups of an IPv6 address already known to be valid (`net.isIPv6`). */
function ipv6Groups(address: string): number[] | undefined {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::');
  const headGroups = head === '' ? [] : head.split(':');
  const tailGroups = tail === undefined || tail === '' ? [] : tail.split(':');
  const missing = 8 - headGroups.length - tailGroups.length;
  if (missing < 0 || (tail === undefined && missing !== 0)) return undefined;
  const groups = [...headGroups, ...Array<string>(missing).fill('0'), ...tailGroups].map((group) =>
    parseInt(group, 16),
  );
  return groups.length === 8 && groups.every((group) => group >= 0 && group <= 0xffff) ? groups : undefined;
}
