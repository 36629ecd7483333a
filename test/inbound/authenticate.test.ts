import { authenticate, type DKIMSignOptions, dkimSign } from 'mailauth';
import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { verdictOfAuthentication } from '../../domain/messages/authentication.ts';
import { generateDkimKeyPair } from '../../infra/dkim/keys.ts';
import { NodeDns } from '../../infra/dns/resolver.ts';
import { authenticateMessage, mailauthResolver } from '../../infra/inbound/authenticate.ts';
import { startDnsServer } from '../support/dns-server.ts';

/**
 * A test "outside" domain publishes its DKIM key, SPF and DMARC in the loopback DNS server; its
 * mail is signed with mailauth and arrives from 192.0.2.10 (its SPF) or elsewhere.
 */
const dns = await startDnsServer(t);
const port = new NodeDns({ servers: [dns.address], timeoutMs: 1500 });
const key = await generateDkimKeyPair();
const forwarderKey = await generateDkimKeyPair();
const OUTSIDE_IP = '192.0.2.10';
const STRANGER_IP = '198.51.100.7';

function publishKey(name: string, publicKey: string) {
  const value = `v=DKIM1; k=rsa; p=${publicKey}`;
  dns.set(name, { TXT: [value.match(/.{1,255}/g)!] });
}

publishKey('s1._domainkey.outside.test', key.publicKey);
dns.set('outside.test', { TXT: [`v=spf1 ip4:${OUTSIDE_IP} -all`], A: [OUTSIDE_IP] });
dns.set('_dmarc.outside.test', { TXT: ['v=DMARC1; p=reject; np=reject; sp=none'] });
dns.set('soft.test', { TXT: ['v=spf1 ~all'] });
dns.set('_dmarc.soft.test', { TXT: ['v=DMARC1; p=quarantine'] });
dns.set('relaxed.test', { TXT: ['v=spf1 -all'] });
dns.set('_dmarc.relaxed.test', { TXT: ['v=DMARC1; p=none'] });
dns.set('quiet.test', { A: ['192.0.2.99'] });
// A subdomain that exists (it has records, none of them A) and one that does not.
dns.set('news.outside.test', { TXT: ['site-verification=1'] });
publishKey('arc1._domainkey.forwarder.test', forwarderKey.publicKey);
dns.set('forwarder.test', { TXT: ['v=spf1 ip4:203.0.113.5 -all'] });

async function message(from: string, extra: Record<string, unknown> = {}): Promise<Buffer> {
  return new MailComposer({
    from,
    to: 'ann@ours.test',
    subject: 'Quarterly report',
    text: 'Numbers attached.\r\n',
    messageId: `<q-${Math.random().toString(36).slice(2)}@outside.test>`,
    ...extra,
  })
    .compile()
    .build();
}

async function signed(raw: Buffer, domain = 'outside.test', selector = 's1', privateKey = key.privateKeyPem) {
  // mailauth reads the keys from `signatureData` alone; its type declares them at the top level.
  const options = {
    signatureData: [{ signingDomain: domain, selector, privateKey, canonicalization: 'relaxed/relaxed' }],
  };
  const { signatures, errors } = await dkimSign(raw, options as unknown as DKIMSignOptions);
  if (errors.length) throw new Error(JSON.stringify(errors));
  return Buffer.concat([Buffer.from(signatures), raw]);
}

const tamper = (raw: Buffer) =>
  Buffer.from(raw.toString('latin1').replace('Numbers attached.', 'Numbers attachée.'), 'latin1');

const check = (raw: Buffer, ip = OUTSIDE_IP, mailFrom = 'bounces@outside.test') =>
  authenticateMessage(port, raw, { ip, helo: 'mail.outside.test', mailFrom, hostname: 'mx.ours.test' });

t.test("given a signed message from the domain's own server, then SPF, DKIM and DMARC pass", async (t) => {
  const auth = await check(await signed(await message('News <news@outside.test>')));
  t.same(auth.spf, { result: 'pass', domain: 'outside.test' });
  t.match(auth.dkim, [{ result: 'pass', domain: 'outside.test', selector: 's1', aligned: true }]);
  t.equal(auth.dkim.length, 1);
  t.same(auth.dmarc, { result: 'pass', fromDomain: 'outside.test', policy: 'reject', testing: false });
  t.same(auth.arc, { result: 'none', instance: 0 });
  t.match(auth.header, /^mx\.ours\.test;\s+dkim=pass header\.i=@outside\.test header\.s=s1/);
  t.match(auth.header, /spf=pass/);
  t.match(auth.header, /dmarc=pass/);
  t.same(verdictOfAuthentication(auth), { spam: false });
});

t.test('given a tampered body from another server, then DKIM and SPF fail and p=reject makes it spam', async (t) => {
  const auth = await check(tamper(await signed(await message('news@outside.test'))), STRANGER_IP);
  t.equal(auth.spf.result, 'fail');
  t.match(auth.dkim, [{ result: 'neutral', domain: 'outside.test', selector: 's1' }]);
  t.match(auth.dkim[0]!.comment, /body hash did not verify/);
  t.match(auth.dmarc, { result: 'fail', policy: 'reject' });
  t.same(verdictOfAuthentication(auth), { spam: true, reason: 'dmarc_reject' });
});

t.test("given a tampered body from the domain's server, then DMARC still passes on aligned SPF", async (t) => {
  const auth = await check(tamper(await signed(await message('news@outside.test'))));
  t.not(auth.dkim[0]!.result, 'pass');
  t.equal(auth.spf.result, 'pass');
  t.equal(auth.dmarc?.result, 'pass');
  t.same(verdictOfAuthentication(auth), { spam: false });
});

t.test('given an unsigned message from a stranger, then there is no DKIM result and DMARC fails', async (t) => {
  const auth = await check(await message('news@outside.test'), STRANGER_IP);
  t.same(auth.dkim, []);
  t.equal(auth.spf.result, 'fail');
  t.match(auth.dmarc, { result: 'fail', policy: 'reject' });
});

t.test('given a signature by another domain, then DKIM passes unaligned and DMARC fails', async (t) => {
  publishKey('s1._domainkey.other.test', key.publicKey);
  const auth = await check(await signed(await message('news@outside.test'), 'other.test'), STRANGER_IP);
  t.match(auth.dkim, [{ result: 'pass', domain: 'other.test', aligned: false }]);
  t.equal(auth.dmarc?.result, 'fail');
});

t.test('quarantine and none: only a policy asking for it makes a failure spam', async (t) => {
  const soft = await check(await message('a@soft.test'), STRANGER_IP, 'a@soft.test');
  t.equal(soft.spf.result, 'softfail');
  t.match(soft.dmarc, { result: 'fail', policy: 'quarantine' });
  t.same(verdictOfAuthentication(soft), { spam: true, reason: 'dmarc_quarantine' });
  const relaxed = await check(await message('a@relaxed.test'), STRANGER_IP, 'a@relaxed.test');
  t.match(relaxed.dmarc, { result: 'fail', policy: 'none' });
  t.same(verdictOfAuthentication(relaxed), { spam: false });
});

t.test('a domain that publishes nothing: none everywhere, not spam', async (t) => {
  const auth = await check(await message('a@quiet.test'), STRANGER_IP, 'a@quiet.test');
  t.same(auth.spf, { result: 'none', domain: 'quiet.test' });
  t.same(auth.dkim, []);
  t.match(auth.dmarc, { result: 'none' });
  t.same(verdictOfAuthentication(auth), { spam: false });
});

t.test('the null sender: SPF checks the HELO name', async (t) => {
  const auth = await authenticateMessage(port, await signed(await message('mailer-daemon@outside.test')), {
    ip: OUTSIDE_IP,
    helo: 'outside.test',
    mailFrom: '',
    hostname: 'mx.ours.test',
  });
  t.same(auth.spf, { result: 'pass', domain: 'outside.test' });
});

t.test('DMARC np applies to a From subdomain that does not exist, sp to one that does', async (t) => {
  const ghost = await check(await message('a@ghost.outside.test'), STRANGER_IP, 'a@ghost.outside.test');
  t.match(ghost.dmarc, { result: 'fail', policy: 'reject' }, 'NXDOMAIN: np=reject');
  const existing = await check(await message('a@news.outside.test'), STRANGER_IP, 'a@news.outside.test');
  t.match(existing.dmarc, { result: 'fail', policy: 'none' }, 'a name with records but no A: sp=none');
});

t.test('DNS failures are temporary errors, never a pass or a fail', async (t) => {
  dns.set('flaky.test', { TXT: ['v=spf1 -all'] });
  dns.misbehave('flaky.test', { kind: 'servfail' });
  publishKey('s1._domainkey.broken.test', key.publicKey);
  dns.misbehave('s1._domainkey.broken.test', { kind: 'servfail' });
  const auth = await check(await signed(await message('a@flaky.test'), 'broken.test'), STRANGER_IP, 'a@flaky.test');
  t.equal(auth.spf.result, 'temperror');
  t.match(auth.dkim, [{ result: 'temperror', domain: 'broken.test' }]);
  t.same(verdictOfAuthentication(auth), { spam: false });
});

t.test("ARC: a forwarder's intact seal passes; a change after sealing fails it", async (t) => {
  const original = await signed(await message('news@outside.test'));
  const forwarded = await authenticate(original, {
    ip: OUTSIDE_IP,
    helo: 'mail.outside.test',
    sender: 'bounces@outside.test',
    mta: 'mx.forwarder.test',
    resolver: mailauthResolver(port),
    disableBimi: true,
    seal: { signingDomain: 'forwarder.test', selector: 'arc1', privateKey: forwarderKey.privateKeyPem },
  });
  const sealed = Buffer.concat([Buffer.from(forwarded.headers), original]);
  const auth = await check(sealed, '203.0.113.5', 'list@forwarder.test');
  t.same(auth.arc, { result: 'pass', instance: 1 });
  const broken = await check(tamper(sealed), '203.0.113.5', 'list@forwarder.test');
  t.equal(broken.arc.result, 'fail');
});

t.test("the resolver speaks Node's error codes for what the port answers", async (t) => {
  const resolve = mailauthResolver(port);
  t.same(await resolve('outside.test', 'TXT'), [[`v=spf1 ip4:${OUTSIDE_IP} -all`]]);
  await t.rejects(resolve('nowhere.test', 'TXT'), { code: 'ENOTFOUND' });
  await t.rejects(resolve('news.outside.test', 'A'), { code: 'ENODATA' });
  await t.rejects(resolve('flaky.test', 'TXT'), { code: 'ESERVFAIL' });
  await t.rejects(resolve('1.2.0.192.in-addr.arpa', 'PTR'), { code: 'ENOTIMP' });
});
