import t, { type Test } from 'tap';
import { CachedDns } from '../../infra/dns/cache.ts';
import { NodeDns } from '../../infra/dns/resolver.ts';
import { startDnsServer } from '../support/dns-server.ts';

async function setup(t: Test, options: { maxEntries?: number } = {}) {
  const server = await startDnsServer(t);
  let now = 1_000_000;
  const dns = new CachedDns(new NodeDns({ servers: [server.address], timeoutMs: 1000 }), {
    ttlMs: 60_000,
    now: () => now,
    ...options,
  });
  const asked = (name: string, type: string) => server.queries.filter((q) => q.name === name && q.type === type).length;
  return { server, dns, asked, advance: (ms: number) => (now += ms) };
}

t.test('answers are reused for the TTL, then asked again', async (t) => {
  const { server, dns, asked, advance } = await setup(t);
  server.set('example.org', { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  t.match(await dns.mx('example.org'), { status: 'found', records: [{ exchange: 'mx.example.org' }] });
  server.set('example.org', { MX: [{ exchange: 'other.example.org', priority: 10 }] });
  t.match(
    await dns.mx('Example.ORG'),
    { status: 'found', records: [{ exchange: 'mx.example.org' }] },
    'within the TTL, names in any case',
  );
  t.equal(asked('example.org', 'MX'), 1);
  advance(60_000);
  t.match(
    await dns.mx('example.org'),
    { status: 'found', records: [{ exchange: 'other.example.org' }] },
    'after it, DNS as it is now',
  );
  t.equal(asked('example.org', 'MX'), 2);
});

t.test('a missing answer is kept, a failure is not', async (t) => {
  const { server, dns, asked } = await setup(t);
  server.set('mx.example.org', { A: ['192.0.2.1'] });
  t.same(await dns.aaaa('mx.example.org'), { status: 'missing', nxdomain: false });
  t.same(await dns.aaaa('mx.example.org'), { status: 'missing', nxdomain: false });
  t.equal(asked('mx.example.org', 'AAAA'), 1);

  server.misbehave('broken.example.org', { kind: 'servfail' });
  t.match(await dns.a('broken.example.org'), { status: 'failed', reason: 'servfail' });
  server.set('broken.example.org', { A: ['192.0.2.2'] });
  t.match(await dns.a('broken.example.org'), { status: 'found', records: ['192.0.2.2'] }, 'asked again at once');
});

t.test('concurrent lookups of one name share one query; the oldest entry makes room', async (t) => {
  const { server, dns, asked } = await setup(t, { maxEntries: 2 });
  server.set('a.example.org', { A: ['192.0.2.1'] });
  server.set('b.example.org', { A: ['192.0.2.2'] });
  server.set('c.example.org', { A: ['192.0.2.3'] });
  await Promise.all(Array.from({ length: 10 }, () => dns.a('a.example.org')));
  t.equal(asked('a.example.org', 'A'), 1);
  await dns.a('b.example.org');
  await dns.a('c.example.org');
  await dns.a('a.example.org');
  t.equal(asked('a.example.org', 'A'), 2, 'a was evicted by c');
  await dns.a('c.example.org');
  t.equal(asked('c.example.org', 'A'), 1);
});
