import type { LookupAddress } from 'node:dns';
import { once } from 'node:events';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import t from 'tap';
import {
  BLOCKED_ADDRESS,
  checkReceiverUrl,
  createOutboundAgents,
  guardedLookup,
  isBlockedAddress,
  MAX_RECEIVER_URL_LENGTH,
  type OutboundPolicy,
  type Resolver,
} from '../../infra/net/outbound-url.ts';

const production: OutboundPolicy = { allowPrivate: false };
const development: OutboundPolicy = { allowPrivate: true };

const base = 'https://hooks.example.com/';
const longest = base + 'a'.repeat(MAX_RECEIVER_URL_LENGTH - base.length);

/** [url, accepted in production, accepted in development, the production reason (when refused)] */
type Row = [string, boolean, boolean, RegExp?];
const PRIVATE = /private or reserved/;
const SCHEME = /scheme/;
const CREDENTIALS = /credentials/;

const rows: Row[] = [
  // public
  ['https://hooks.example.com/in', true, true],
  ['https://hooks.example.com:8443/in?x=1#frag', true, true],
  ['https://hooks.example.com.:1/', true, true],
  ['https://bücher.example/hook', true, true],
  ['https://93.184.216.34/', true, true],
  ['https://8.8.8.8:9/', true, true],
  ['https://[2606:4700:4700::1111]/', true, true],
  ['https://[::ffff:8.8.8.8]/', true, true],
  ['https://[64:ff9b::808:808]/', true, true], // NAT64 of 8.8.8.8
  ['https://[2002:808:808::1]/', true, true], // 6to4 of 8.8.8.8
  [longest, true, true],
  // range boundaries that are public
  ['https://9.255.255.255/', true, true],
  ['https://11.0.0.0/', true, true],
  ['https://100.63.255.255/', true, true],
  ['https://100.128.0.0/', true, true],
  ['https://126.255.255.255/', true, true],
  ['https://128.0.0.0/', true, true],
  ['https://169.253.255.255/', true, true],
  ['https://169.255.0.0/', true, true],
  ['https://172.15.255.255/', true, true],
  ['https://172.32.0.0/', true, true],
  ['https://192.0.1.0/', true, true],
  ['https://192.167.255.255/', true, true],
  ['https://192.169.0.0/', true, true],
  ['https://198.17.255.255/', true, true],
  ['https://198.20.0.0/', true, true],
  ['https://223.255.255.255/', true, true],
  // http is for development only
  ['http://hooks.example.com/in', false, true, SCHEME],
  // IPv4 ranges
  ['https://0.0.0.0/', false, true, PRIVATE],
  ['https://0.255.255.255/', false, true, PRIVATE],
  ['https://10.0.0.1/', false, true, PRIVATE],
  ['https://10.255.255.255/', false, true, PRIVATE],
  ['https://100.64.0.0/', false, true, PRIVATE],
  ['https://100.127.255.255/', false, true, PRIVATE],
  ['https://127.0.0.1/', false, true, PRIVATE],
  ['https://127.255.255.254:8080/', false, true, PRIVATE],
  ['https://169.254.0.1/', false, true, PRIVATE],
  ['https://169.254.169.254/latest/meta-data/', false, true, PRIVATE],
  ['https://172.16.0.0/', false, true, PRIVATE],
  ['https://172.31.255.255/', false, true, PRIVATE],
  ['https://192.0.0.8/', false, true, PRIVATE],
  ['https://192.168.0.1/', false, true, PRIVATE],
  ['https://192.168.255.255/', false, true, PRIVATE],
  ['https://198.18.0.0/', false, true, PRIVATE],
  ['https://198.19.255.255/', false, true, PRIVATE],
  ['https://224.0.0.1/', false, true, PRIVATE],
  ['https://239.255.255.250/', false, true, PRIVATE],
  ['https://240.0.0.1/', false, true, PRIVATE],
  ['https://255.255.255.255/', false, true, PRIVATE],
  // IPv4 spelled otherwise: WHATWG normalises them to dotted decimal first
  ['https://2130706433/', false, true, PRIVATE],
  ['https://0x7f.1/', false, true, PRIVATE],
  ['https://0x7f000001/', false, true, PRIVATE],
  ['https://017700000001/', false, true, PRIVATE],
  ['https://0177.0.0.1/', false, true, PRIVATE],
  ['https://127.1/', false, true, PRIVATE],
  ['https://0/', false, true, PRIVATE],
  ['https://0xa9fea9fe/', false, true, PRIVATE], // 169.254.169.254
  ['https://3232235777/', false, true, PRIVATE], // 192.168.1.1
  ['https://0xA.0.0.1/', false, true, PRIVATE],
  ['http://2130706433/', false, true, SCHEME],
  ['http://0x7f.1/', false, true, SCHEME],
  // IPv6
  ['https://[::]/', false, true, PRIVATE],
  ['https://[::1]/', false, true, PRIVATE],
  ['https://[0:0:0:0:0:0:0:1]:8443/', false, true, PRIVATE],
  ['https://[fc00::1]/', false, true, PRIVATE],
  ['https://[fd12:3456:789a::1]/', false, true, PRIVATE],
  ['https://[fe80::1]/', false, true, PRIVATE],
  ['https://[febf:ffff::1]/', false, true, PRIVATE],
  ['https://[ff02::1]/', false, true, PRIVATE],
  ['https://[::ffff:127.0.0.1]/', false, true, PRIVATE],
  ['https://[::ffff:7f00:1]/', false, true, PRIVATE],
  ['https://[::ffff:10.0.0.1]/', false, true, PRIVATE],
  ['https://[::ffff:169.254.169.254]/', false, true, PRIVATE],
  ['https://[::ffff:192.168.0.1]/', false, true, PRIVATE],
  ['https://[::127.0.0.1]/', false, true, PRIVATE], // IPv4-compatible (deprecated)
  ['https://[64:ff9b::a9fe:a9fe]/', false, true, PRIVATE], // NAT64 of 169.254.169.254
  ['https://[2002:7f00:1::1]/', false, true, PRIVATE], // 6to4 of 127.0.0.1
  ['https://[2001:db8::1]/', false, true, PRIVATE],
  // local names
  ['https://localhost/', false, true, /local/],
  ['https://LOCALHOST./', false, true, /local/],
  ['https://api.localhost:3000/', false, true, /local/],
  ['https://printer.local/', false, true, /local/],
  ['https://metadata.google.internal/computeMetadata/v1/', false, true, /local/],
  ['https://metadata/', false, true, /fully qualified/],
  // refused under both policies
  ['https://user:pass@hooks.example.com/', false, false, CREDENTIALS],
  ['https://user@hooks.example.com/', false, false, CREDENTIALS],
  ['https://:secret@hooks.example.com/', false, false, CREDENTIALS],
  ['https://@hooks.example.com/', false, false, CREDENTIALS],
  ['http://user:pass@127.0.0.1/', false, false, SCHEME],
  ['ftp://hooks.example.com/', false, false, SCHEME],
  ['file:///etc/passwd', false, false, SCHEME],
  ['javascript:alert(1)', false, false, SCHEME],
  ['gopher://hooks.example.com:70/', false, false, SCHEME],
  ['wss://hooks.example.com/', false, false, SCHEME],
  ['/webhooks/in', false, false, /absolute/],
  ['hooks.example.com/in', false, false, /absolute/],
  ['//hooks.example.com/in', false, false, /absolute/],
  ['', false, false, /empty/],
  [`${longest}a`, false, false, /longer than 2048/],
  [`https://hooks.example.com/${'a'.repeat(10_000)}`, false, false, /longer than 2048/],
  [' https://hooks.example.com/', false, false, /spaces or control/],
  ['https://hooks.example.com/\n', false, false, /spaces or control/],
  ['https://hooks.exa\tmple.com/', false, false, /spaces or control/],
  ['https://[fe80::1%25eth0]/', false, false, /absolute/],
  ['https://[::1/', false, false, /absolute/],
  ['https://999.1.1.1/', false, false, /absolute/],
];

t.test('checkReceiverUrl', async (t) => {
  for (const [raw, inProduction, inDevelopment, reason] of rows) {
    const label = raw.length > 80 ? `${raw.slice(0, 40)}... (${raw.length} characters)` : JSON.stringify(raw);
    const prod = checkReceiverUrl(raw, production);
    t.equal(prod.ok, inProduction, `production ${inProduction ? 'accepts' : 'refuses'} ${label}`);
    if (!prod.ok && reason) t.match(prod.reason, reason, `  with the reason "${prod.reason}"`);
    const dev = checkReceiverUrl(raw, development);
    t.equal(dev.ok, inDevelopment, `development ${inDevelopment ? 'accepts' : 'refuses'} ${label}`);
  }

  const normalised = checkReceiverUrl('https://Hooks.EXAMPLE.com:443/in', production);
  t.ok(normalised.ok && normalised.url.href === 'https://hooks.example.com/in', 'answers the normalised URL');
  const numeric = checkReceiverUrl('http://0x7f.1:8080/', development);
  t.ok(numeric.ok && numeric.url.hostname === '127.0.0.1', 'development accepts numeric IPv4 spellings, normalised');
});

t.test('isBlockedAddress', async (t) => {
  t.ok(isBlockedAddress('fe80::1%eth0'), 'a scoped link-local address');
  t.ok(isBlockedAddress('[::1]'), 'a bracketed address');
  t.ok(isBlockedAddress('not-an-address'), 'not an IP address: blocked');
  t.ok(isBlockedAddress('::ffff:a9fe:a9fe'), 'mapped 169.254.169.254 in hex');
  t.notOk(isBlockedAddress('8.8.8.8'));
  t.notOk(isBlockedAddress('2606:4700:4700::1111'));
  t.notOk(isBlockedAddress('::ffff:8.8.8.8'));
});

function lookupOnce(
  lookup: ReturnType<typeof guardedLookup>,
  hostname: string,
  options: { all?: boolean; family?: number },
): Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }> {
  return new Promise((resolve) =>
    lookup(hostname, options, (error, address, family) => resolve({ error, address, family })),
  );
}

/** A resolver that answers from a table, for names that must not reach real DNS. */
function fakeResolver(table: Record<string, string[]>): Resolver {
  return (hostname, _options, callback) => {
    const addresses = table[hostname];
    process.nextTick(() => {
      if (!addresses) {
        callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      } else {
        callback(
          null,
          addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })),
        );
      }
    });
  };
}

t.test('guardedLookup', async (t) => {
  for (const options of [{}, { all: true }, { family: 4 }]) {
    const refused = await lookupOnce(guardedLookup(production), 'localhost', options);
    t.equal(refused.error?.code, BLOCKED_ADDRESS, `production: localhost is refused (${JSON.stringify(options)})`);
    t.equal((refused.error as { hostname?: string } | null)?.hostname, 'localhost', 'the error names the host');
  }

  const single = await lookupOnce(guardedLookup(development), 'localhost', { family: 4 });
  t.equal(single.error, null, 'development: localhost resolves');
  t.equal(single.address, '127.0.0.1');
  t.equal(single.family, 4);
  const all = await lookupOnce(guardedLookup(development), 'localhost', { all: true });
  t.ok(Array.isArray(all.address) && all.address.length > 0, 'all: true answers a list');

  const dns = fakeResolver({
    'rebound.example': ['93.184.216.34', '10.0.0.7'],
    'metadata.example': ['169.254.169.254'],
    'v6-local.example': ['2606:4700::1', 'fd00::1'],
    'public.example': ['93.184.216.34', '2606:4700::1'],
  });
  for (const name of ['rebound.example', 'metadata.example', 'v6-local.example']) {
    const answer = await lookupOnce(guardedLookup(production, dns), name, { all: true });
    t.equal(answer.error?.code, BLOCKED_ADDRESS, `production: ${name} is refused when any address is private`);
  }
  const pub = await lookupOnce(guardedLookup(production, dns), 'public.example', {});
  t.same(
    [pub.error, pub.address, pub.family],
    [null, '93.184.216.34', 4],
    'a public name resolves to its first address',
  );
  const pubAll = await lookupOnce(guardedLookup(production, dns), 'public.example', { all: true });
  t.same(pubAll.address, [
    { address: '93.184.216.34', family: 4 },
    { address: '2606:4700::1', family: 6 },
  ]);
  const rebound = await lookupOnce(guardedLookup(development, dns), 'rebound.example', { all: true });
  t.equal(rebound.error, null, 'development lets private answers through');
  const missing = await lookupOnce(guardedLookup(production, dns), 'missing.example', {});
  t.equal(missing.error?.code, 'ENOTFOUND', 'resolver errors pass through');
});

t.test('outbound agents', async (t) => {
  const peers: number[] = [];
  const server = http.createServer((request, response) => {
    peers.push(request.socket.remotePort ?? 0);
    response.end('pong');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  server.keepAliveTimeout = 5_000;
  const port = (server.address() as AddressInfo).port;
  const dns = fakeResolver({ 'receiver.example': ['127.0.0.1'], localhost: ['127.0.0.1', '::1'] });

  function get(
    url: string,
    agents: ReturnType<typeof createOutboundAgents>,
  ): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const secure = url.startsWith('https:');
      const request = (secure ? https : http).get(
        url,
        { agent: secure ? agents.https : agents.http, timeout: 5_000 },
        (response) => {
          let body = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (body += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body }));
          response.on('error', reject);
        },
      );
      request.on('timeout', () => request.destroy(new Error('timed out')));
      request.on('error', reject);
    });
  }

  t.test('production: nothing reaches the loopback server', async (t) => {
    const agents = createOutboundAgents(production, dns);
    t.teardown(() => {
      agents.http.destroy();
      agents.https.destroy();
    });
    for (const url of [
      `http://localhost:${port}/`,
      `http://127.0.0.1:${port}/`,
      `http://[::ffff:127.0.0.1]:${port}/`,
      `http://receiver.example:${port}/`,
      `https://localhost:${port}/`,
      `https://127.0.0.1:${port}/`,
      `https://receiver.example:${port}/`,
    ]) {
      await t.rejects(get(url, agents), { code: BLOCKED_ADDRESS }, `${url} is refused`);
    }
    const withSystemDns = createOutboundAgents(production);
    t.teardown(() => withSystemDns.http.destroy());
    await t.rejects(
      get(`http://localhost:${port}/`, withSystemDns),
      { code: BLOCKED_ADDRESS },
      'system DNS: localhost is refused',
    );
    t.equal(peers.length, 0, 'the server saw no request');
  });

  t.test('development: loopback is reachable, over a kept-alive connection', async (t) => {
    const agents = createOutboundAgents(development, dns);
    t.teardown(() => {
      agents.http.destroy();
      agents.https.destroy();
    });
    const first = await get(`http://127.0.0.1:${port}/`, agents);
    const second = await get(`http://127.0.0.1:${port}/`, agents);
    t.same(first, { status: 200, body: 'pong' });
    t.same(second, { status: 200, body: 'pong' });
    t.equal(peers.length, 2);
    t.equal(peers[0], peers[1], 'the second request reused the first connection');
    t.same(
      await get(`http://receiver.example:${port}/`, agents),
      { status: 200, body: 'pong' },
      'through the lookup too',
    );
  });
});
