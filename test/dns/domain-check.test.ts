import crypto from 'node:crypto';
import t from 'tap';
import { checkDomain, type Observations } from '../../domain/domains/check.ts';
import { dnsQueries, requiredRecords, type DomainSetup } from '../../domain/domains/records.ts';
import { generateDkimKeyPair } from '../../infra/dkim/keys.ts';
import { lookup } from '../../infra/dns/port.ts';
import { NodeDns } from '../../infra/dns/resolver.ts';
import { startDnsServer, type TestDnsServer, type ZoneEntry } from '../support/dns-server.ts';

const HOSTS = {
  mx: 'mx.mail.test',
  spfInclude: 'spf.mail.test',
  returnPath: 'bounces.mail.test',
  tracking: 'track.mail.test',
  storage: 'files.mail.test',
};
const keys = await generateDkimKeyPair();
const SETUP: DomainSetup = {
  domain: 'example.com',
  hosts: HOSTS,
  dkim: { selector: 'wms202601', publicKey: keys.publicKey },
  trackingHost: 'track.example.com',
};

/** What a DNS host makes of the records we ask for: TXT values over 255 bytes split in chunks. */
function publish(server: TestDnsServer, setup: DomainSetup) {
  const entries = new Map<string, ZoneEntry>();
  for (const record of requiredRecords(setup)) {
    const entry = entries.get(record.name) ?? {};
    if (record.type === 'MX') entry.MX = [{ exchange: record.value, priority: record.priority! }];
    if (record.type === 'CNAME') entry.CNAME = record.value;
    if (record.type === 'TXT') entry.TXT = [...(entry.TXT ?? []), record.value.match(/.{1,255}/g)!];
    entries.set(record.name, entry);
  }
  for (const [name, entry] of entries) server.set(name, entry);
}

async function check(dns: NodeDns, setup = SETUP) {
  const answers = await Promise.all(
    dnsQueries(setup).map(async (query) => [query.key, await lookup(dns, query.type, query.name)] as const),
  );
  return checkDomain(setup, Object.fromEntries(answers) as Observations);
}

t.test('the DKIM pair: 2048-bit RSA, the record carries the public half of the private key', async (t) => {
  const privateKey = crypto.createPrivateKey(keys.privateKeyPem);
  t.equal(privateKey.asymmetricKeyType, 'rsa');
  t.equal(privateKey.asymmetricKeyDetails?.modulusLength, 2048);
  t.match(keys.privateKeyPem, /^-----BEGIN PRIVATE KEY-----\n/);
  const publicKey = crypto.createPublicKey({ key: Buffer.from(keys.publicKey, 'base64'), format: 'der', type: 'spki' });
  const signature = crypto.sign('sha256', Buffer.from('dkim-signature header'), privateKey);
  t.ok(crypto.verify('sha256', Buffer.from('dkim-signature header'), publicKey, signature));
  t.notSame((await generateDkimKeyPair()).publicKey, keys.publicKey, 'a new pair each time');
});

t.test('given every record published (the DKIM key in chunks), when checked through DNS, then verified', async (t) => {
  const server = await startDnsServer(t);
  publish(server, SETUP);
  const result = await check(new NodeDns({ servers: [server.address] }));
  t.same(
    result.records.map((r) => `${r.purpose} ${r.status}`),
    ['receiving found', 'spf found', 'dkim found', 'dmarc found', 'return_path found', 'tracking found'],
  );
  t.same(result.receiving, { verified: true, error: null });
  t.same(result.sending, { status: 'verified', error: null });
  t.match(result.dmarc, { stage: 'monitoring', alignmentPossible: true, caveat: null });
  t.same(
    result.dmarc?.issues.map((i) => i.code),
    ['monitoring_only'],
  );
});

t.test('given nothing published, then missing everywhere and pending', async (t) => {
  const server = await startDnsServer(t);
  const result = await check(new NodeDns({ servers: [server.address] }));
  t.ok(result.records.every((r) => r.status === 'missing'));
  t.equal(result.sending.status, 'pending');
  t.equal(result.receiving.verified, false);
  t.match(result.dmarc, { stage: 'none' });
});

t.test('given values of another provider, then missing with the reason, and sending failed', async (t) => {
  const server = await startDnsServer(t);
  publish(server, SETUP);
  server.set('example.com', {
    MX: [{ exchange: 'aspmx.l.google.com', priority: 1 }],
    TXT: ['v=spf1 include:_spf.google.com ~all'],
  });
  server.set('wms202601._domainkey.example.com', {
    TXT: [`v=DKIM1; k=rsa; p=${(await generateDkimKeyPair()).publicKey}`.match(/.{1,255}/g)!],
  });
  const result = await check(new NodeDns({ servers: [server.address] }));
  t.same(
    result.records.map((r) => `${r.purpose} ${r.status}`),
    ['receiving missing', 'spf missing', 'dkim missing', 'dmarc found', 'return_path found', 'tracking found'],
  );
  t.match(result.receiving.error, /aspmx.l.google.com/);
  t.equal(result.sending.status, 'failed');
});

t.test(
  'SERVFAIL and silence leave their records unchecked and the verdict unknown; the rest is answered',
  async (t) => {
    const server = await startDnsServer(t);
    publish(server, SETUP);
    server.misbehave('wms202601._domainkey.example.com', { kind: 'servfail' });
    server.misbehave('track.example.com', { kind: 'silent' });
    const result = await check(new NodeDns({ servers: [server.address], timeoutMs: 800 }));
    t.same(
      result.records.map((r) => `${r.purpose} ${r.status}`),
      ['receiving found', 'spf found', 'dkim null', 'dmarc found', 'return_path found', 'tracking null'],
    );
    t.match(result.records[2]!.problem, /failed \(servfail\)/);
    t.match(result.records[5]!.problem, /failed \(timeout\)/);
    t.equal(result.sending.status, 'unknown');
    t.equal(result.receiving.verified, true);
  },
);
