import dgram from 'node:dgram';
import t from 'tap';
import { readConfig } from '../../infra/config.ts';
import { NodeDns, parseDnsServers } from '../../infra/dns/resolver.ts';
import { startDnsServer } from '../support/dns-server.ts';

t.test('records found: TXT, MX, CNAME, A, AAAA', async (t) => {
  const server = await startDnsServer(t);
  server.set('example.com', {
    TXT: ['v=spf1 include:spf.mail.test ~all', 'google-site-verification=abc'],
    MX: [
      { exchange: 'mx.mail.test', priority: 10 },
      { exchange: 'backup.mail.test', priority: 20 },
    ],
    A: ['192.0.2.1'],
    AAAA: ['2001:db8::1'],
  });
  server.set('bounces.example.com', { CNAME: 'bounces.mail.test' });
  const dns = new NodeDns({ servers: [server.address] });

  const txt = await dns.txt('example.com');
  t.equal(txt.status, 'found');
  if (txt.status === 'found')
    t.same([...txt.records].sort(), ['google-site-verification=abc', 'v=spf1 include:spf.mail.test ~all']);
  const mx = await dns.mx('example.com');
  t.equal(mx.status, 'found');
  if (mx.status === 'found')
    t.same(
      [...mx.records].sort((a, b) => a.priority - b.priority),
      [
        { exchange: 'mx.mail.test', priority: 10 },
        { exchange: 'backup.mail.test', priority: 20 },
      ],
    );
  t.same(await dns.cname('bounces.example.com'), { status: 'found', records: ['bounces.mail.test'] });
  t.same(await dns.a('example.com'), { status: 'found', records: ['192.0.2.1'] });
  t.same(await dns.aaaa('example.com'), { status: 'found', records: ['2001:db8::1'] });
});

t.test('a value other than ours comes back as published', async (t) => {
  const server = await startDnsServer(t);
  server.set('example.com', { MX: [{ exchange: 'aspmx.l.google.com', priority: 1 }] });
  server.set('track.example.com', { CNAME: 'links.other-provider.test' });
  const dns = new NodeDns({ servers: [server.address] });
  t.same(await dns.mx('example.com'), { status: 'found', records: [{ exchange: 'aspmx.l.google.com', priority: 1 }] });
  t.same(await dns.cname('track.example.com'), { status: 'found', records: ['links.other-provider.test'] });
});

t.test('missing: a name that does not exist, and a name without records of the type', async (t) => {
  const server = await startDnsServer(t);
  server.set('example.com', { A: ['192.0.2.1'] });
  const dns = new NodeDns({ servers: [server.address] });
  t.same(await dns.txt('nowhere.example.com'), { status: 'missing', nxdomain: true }, 'NXDOMAIN');
  t.same(await dns.mx('nowhere.example.com'), { status: 'missing', nxdomain: true }, 'NXDOMAIN');
  t.same(await dns.a('nowhere.example.com'), { status: 'missing', nxdomain: true }, 'NXDOMAIN');
  t.same(await dns.txt('example.com'), { status: 'missing', nxdomain: false }, 'NODATA');
  t.same(await dns.mx('example.com'), { status: 'missing', nxdomain: false }, 'NODATA');
  t.same(await dns.cname('example.com'), { status: 'missing', nxdomain: false }, 'no CNAME at a name with an address');
  t.same(await dns.aaaa('example.com'), { status: 'missing', nxdomain: false }, 'NODATA');
});

t.test('a TXT lookup follows a CNAME, as DKIM records delegated to a provider need', async (t) => {
  const server = await startDnsServer(t);
  server.set('s1._domainkey.example.com', { CNAME: 's1.dkim.provider.test' });
  server.set('s1.dkim.provider.test', { TXT: ['v=DKIM1; p=AAAA'] });
  const dns = new NodeDns({ servers: [server.address] });
  t.same(await dns.txt('s1._domainkey.example.com'), { status: 'found', records: ['v=DKIM1; p=AAAA'] });
});

t.test(
  'a long TXT record in 255-byte chunks is joined into one value (RFC 7208 3.3), over TCP when UDP truncates',
  async (t) => {
    const server = await startDnsServer(t);
    const key = `MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA${'x'.repeat(400)}`;
    const record = `v=DKIM1; k=rsa; p=${key}`;
    const chunks = [record.slice(0, 255), record.slice(255)];
    const long = 'y'.repeat(300);
    server.set('wms202601._domainkey.example.com', { TXT: [chunks, [long.slice(0, 255), long.slice(255)]] });
    const dns = new NodeDns({ servers: [server.address] });
    const answer = await dns.txt('wms202601._domainkey.example.com');
    t.equal(answer.status, 'found');
    if (answer.status === 'found') t.same([...answer.records].sort(), [record, long].sort());
    t.ok(
      server.queries.some((q) => q.transport === 'tcp' && q.name === 'wms202601._domainkey.example.com'),
      'the truncated UDP answer was asked again over TCP',
    );
  },
);

t.test('failures say why: SERVFAIL, REFUSED, timeout, no server listening', async (t) => {
  const server = await startDnsServer(t);
  server.misbehave('broken.example.com', { kind: 'servfail' });
  server.misbehave('closed.example.com', { kind: 'refused' });
  server.misbehave('silent.example.com', { kind: 'silent' });
  const dns = new NodeDns({ servers: [server.address], timeoutMs: 600, tries: 2 });
  t.same(await dns.txt('broken.example.com'), { status: 'failed', reason: 'servfail', detail: 'ESERVFAIL' });
  t.same(await dns.mx('closed.example.com'), { status: 'failed', reason: 'refused', detail: 'EREFUSED' });
  const started = Date.now();
  t.same(await dns.txt('silent.example.com'), { status: 'failed', reason: 'timeout', detail: 'ETIMEOUT' });
  const took = Date.now() - started;
  t.ok(took >= 500, `gave the server its time (${took} ms)`);

  // c-ares doubles its wait on each try (250, 500, 1000, 2000 ms here); the deadline holds the whole lookup to 1 s.
  const bounded = new NodeDns({ servers: [server.address], timeoutMs: 1000, tries: 4 });
  const start = Date.now();
  t.same(await bounded.mx('silent.example.com'), { status: 'failed', reason: 'timeout', detail: 'ETIMEOUT' });
  t.ok(Date.now() - start < 2500, `the whole lookup kept to its time (${Date.now() - start} ms)`);

  const port = await closedUdpPort();
  const nobody = new NodeDns({ servers: [`127.0.0.1:${port}`], timeoutMs: 2000, tries: 1 });
  const answer = await nobody.txt('example.com');
  t.equal(answer.status, 'failed');
  if (answer.status === 'failed')
    t.ok(['unreachable', 'timeout'].includes(answer.reason), `no server: ${answer.reason}`);
});

t.test('a slow or silent name never holds up another lookup on the same resolver', async (t) => {
  const server = await startDnsServer(t);
  server.set('slow.example.com', { TXT: ['slow'] });
  // Well inside the first try's 1.5 s, and the silent one's 3 s deadline well after it.
  server.misbehave('slow.example.com', { kind: 'slow', ms: 800 });
  server.misbehave('silent.example.com', { kind: 'silent' });
  server.set('fast.example.com', { TXT: ['fast'] });
  const dns = new NodeDns({ servers: [server.address], timeoutMs: 3000 });
  const settled: string[] = [];
  const slow = dns.txt('slow.example.com').then((answer) => {
    settled.push('slow');
    return answer;
  });
  const silent = dns.txt('silent.example.com').then((answer) => {
    settled.push('silent');
    return answer;
  });
  const fast = await Promise.all([1, 2, 3].map(() => dns.txt('fast.example.com')));
  t.same(
    fast,
    [1, 2, 3].map(() => ({ status: 'found', records: ['fast'] })),
  );
  t.same(settled, [], 'the fast answers came while the slow and silent ones were still out');
  t.same(await slow, { status: 'found', records: ['slow'] }, 'the slow answer still arrives');
  t.same(
    await silent,
    { status: 'failed', reason: 'timeout', detail: 'ETIMEOUT' },
    'the silent one times out on its own',
  );
  t.same(settled, ['slow', 'silent']);
});

t.test('a late answer arrives within the deadline however many fast ones came before it', async (t) => {
  // c-ares 1.34 shortens a channel's timeouts to what the server's earlier answers took and drops
  // the answer to an attempt it has retried: on one long-lived channel, after 200 answers in well
  // under a millisecond, an answer 1.5 s late failed ETIMEOUT (docs/decisions/domains-dns.md).
  const server = await startDnsServer(t);
  for (let i = 0; i < 200; i++) server.set(`n${i}.example.com`, { TXT: [`n${i}`] });
  server.set('late.example.com', { TXT: ['late'] });
  server.misbehave('late.example.com', { kind: 'slow', ms: 1500 });
  const dns = new NodeDns({ servers: [server.address], timeoutMs: 5000 });
  for (let i = 0; i < 200; i++) await dns.txt(`n${i}.example.com`);
  t.same(await dns.txt('late.example.com'), { status: 'found', records: ['late'] });
  t.equal(server.queries.filter((q) => q.name === 'late.example.com').length, 1, 'asked once, not retried');
});

t.test('DNS_SERVERS: IP addresses with optional ports, for setServers', async (t) => {
  t.same(parseDnsServers(undefined), []);
  t.same(parseDnsServers(' '), []);
  t.same(parseDnsServers('127.0.0.1:5353, 10.0.0.2,[::1]:53 ,::1, [2001:db8::1]'), [
    '127.0.0.1:5353',
    '10.0.0.2',
    '[::1]:53',
    '::1',
    '[2001:db8::1]',
  ]);
  for (const bad of [
    'dns.example.com',
    '127.0.0.1:',
    '127.0.0.1:0',
    '127.0.0.1:70000',
    '1.2.3.4:53:1',
    '[::1',
    '127.0.0.1,,10.0.0.1',
  ]) {
    t.throws(() => parseDnsServers(bad), /DNS_SERVERS/, bad);
  }
  t.same(readConfig({ DNS_SERVERS: '127.0.0.1:5353' }).dnsServers, ['127.0.0.1:5353']);
  t.same(readConfig({}).dnsServers, [], 'unset: the system resolver');
});

t.test('the adapter with DNS_SERVERS from the configuration asks that server', async (t) => {
  const server = await startDnsServer(t);
  server.set('example.com', { TXT: ['configured'] });
  const dns = new NodeDns({ servers: readConfig({ DNS_SERVERS: server.address }).dnsServers });
  t.same(await dns.txt('example.com'), { status: 'found', records: ['configured'] });
});

/** A UDP port with nothing bound to it: one just released by a probe socket. */
function closedUdpPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = dgram.createSocket('udp4');
    probe.once('error', reject);
    probe.bind(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}
