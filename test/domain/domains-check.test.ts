import t from 'tap';
import { checkDomain, type Lookup, type MxAnswer, type Observations } from '../../domain/domains/check.ts';
import { dnsQueries, requiredRecords, type DomainSetup } from '../../domain/domains/records.ts';
import { canSend, effectiveVerdict } from '../../domain/domains/sending.ts';

const HOSTS = {
  mx: 'mx.mail.test',
  spfInclude: 'spf.mail.test',
  returnPath: 'bounces.mail.test',
  tracking: 'track.mail.test',
  storage: 'files.mail.test',
};
const KEY = 'MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAwF2abc+def/ghiQIDAQAB';
const SETUP: DomainSetup = {
  domain: 'example.com',
  hosts: HOSTS,
  dkim: { selector: 'wms202601', publicKey: KEY },
  trackingHost: 'track.example.com',
};

const found = <T>(...records: T[]): Lookup<T> => ({ status: 'found', records });
const missing: Lookup<never> = { status: 'missing' };
const servfail: Lookup<never> = { status: 'failed', reason: 'servfail' };

/** Everything published as we ask. */
const published: Required<Omit<Observations, 'organizational_dmarc'>> = {
  receiving: found<MxAnswer>({ exchange: 'mx.mail.test', priority: 10 }),
  spf: found('v=spf1 include:spf.mail.test ~all'),
  dkim: found(`v=DKIM1; k=rsa; p=${KEY}`),
  dmarc: found('v=DMARC1; p=reject; rua=mailto:dmarc@example.com'),
  return_path: found('bounces.mail.test'),
  tracking: found('track.mail.test'),
  storage: found('files.mail.test'),
};
const nothing: Observations = {
  receiving: missing,
  spf: missing,
  dkim: missing,
  dmarc: missing,
  return_path: missing,
  tracking: missing,
  storage: missing,
};

const statuses = (observations: Observations, setup = SETUP) =>
  Object.fromEntries(checkDomain(setup, observations).records.map((r) => [r.purpose, r.status]));

t.test('the records a domain needs, with names and values', async (t) => {
  t.same(requiredRecords(SETUP), [
    { type: 'MX', name: 'example.com', value: 'mx.mail.test', priority: 10, purpose: 'receiving' },
    { type: 'TXT', name: 'example.com', value: 'v=spf1 include:spf.mail.test ~all', priority: null, purpose: 'spf' },
    {
      type: 'TXT',
      name: 'wms202601._domainkey.example.com',
      value: `v=DKIM1; k=rsa; p=${KEY}`,
      priority: null,
      purpose: 'dkim',
    },
    {
      type: 'TXT',
      name: '_dmarc.example.com',
      value: 'v=DMARC1; p=none; rua=mailto:postmaster@example.com',
      priority: null,
      purpose: 'dmarc',
    },
    { type: 'CNAME', name: 'bounces.example.com', value: 'bounces.mail.test', priority: null, purpose: 'return_path' },
    { type: 'CNAME', name: 'track.example.com', value: 'track.mail.test', priority: null, purpose: 'tracking' },
  ]);
  t.match(requiredRecords({ ...SETUP, dmarcPolicy: 'quarantine' })[3], {
    value: 'v=DMARC1; p=quarantine; rua=mailto:postmaster@example.com',
  });
  t.notOk(
    requiredRecords({ ...SETUP, dkim: null }).some((r) => r.purpose === 'dkim'),
    'no key, no DKIM record',
  );
});

t.test('the lookups: one per record, and the organizational DMARC record for a subdomain', async (t) => {
  t.same(
    dnsQueries(SETUP).map((q) => `${q.key} ${q.type} ${q.name}`),
    [
      'receiving MX example.com',
      'spf TXT example.com',
      'dkim TXT wms202601._domainkey.example.com',
      'dmarc TXT _dmarc.example.com',
      'return_path CNAME bounces.example.com',
      'tracking CNAME track.example.com',
    ],
  );
  t.match(dnsQueries({ ...SETUP, domain: 'news.example.co.uk' }).at(-1), {
    key: 'organizational_dmarc',
    type: 'TXT',
    name: '_dmarc.example.co.uk',
  });
});

t.test(
  'given everything published, when checked, then every record is found, receiving and sending are verified',
  async (t) => {
    const check = checkDomain(SETUP, published);
    t.same(statuses(published), {
      receiving: 'found',
      spf: 'found',
      dkim: 'found',
      dmarc: 'found',
      return_path: 'found',
      tracking: 'found',
    });
    t.same(check.receiving, { verified: true, error: null });
    t.same(check.sending, { status: 'verified', error: null });
    t.ok(check.records.every((r) => r.problem === null));
  },
);

t.test('given nothing published, when checked, then every record is missing and sending is pending', async (t) => {
  const check = checkDomain(SETUP, nothing);
  t.same(statuses(nothing), {
    receiving: 'missing',
    spf: 'missing',
    dkim: 'missing',
    dmarc: 'missing',
    return_path: 'missing',
    tracking: 'missing',
  });
  t.same(check.receiving, { verified: false, error: 'No MX record at example.com yet.' });
  t.equal(check.sending.status, 'pending');
  t.match(check.sending.error, /No TXT record at wms202601._domainkey.example.com yet/);
});

t.test('given no lookups at all, then every status is null (unchecked)', async (t) => {
  const check = checkDomain(SETUP, {});
  t.ok(check.records.every((r) => r.status === null && r.verdict === null));
  t.same(check.receiving, { verified: false, error: null });
  t.equal(check.sending.status, 'unknown');
  t.equal(check.dmarc, null);
});

t.test('SPF: ours among other mechanisms counts; one record only; a pass qualifier only', async (t) => {
  const spf = (...txt: string[]) => statuses({ ...published, spf: found(...txt) }).spf;
  t.equal(spf('v=spf1 ip4:192.0.2.0/24 include:_spf.google.com include:spf.mail.test -all'), 'found');
  t.equal(
    spf('google-site-verification=x', 'V=SPF1 +include:SPF.MAIL.TEST. ~all'),
    'found',
    'other TXT records ignored; case and root dot',
  );
  t.equal(spf('v=spf1 redirect=spf.mail.test'), 'found', 'a redirect to ours');
  t.equal(spf('v=spf1 include:_spf.google.com ~all'), 'missing', 'without ours');
  t.equal(spf('v=spf1 -include:spf.mail.test ~all'), 'missing', 'a fail qualifier does not authorise');
  t.equal(spf('v=spf1 include:spf.mail.test.evil.test ~all'), 'missing');
  t.equal(
    spf('v=spf1 include:spf.mail.test ~all', 'v=spf1 include:_spf.google.com ~all'),
    'missing',
    'two SPF records are an error',
  );
  t.equal(spf('v=spf10 include:spf.mail.test'), 'missing', 'not an SPF record');
  const two = checkDomain(SETUP, {
    ...published,
    spf: found('v=spf1 include:a.test -all', 'v=spf1 include:spf.mail.test -all'),
  }).records[1]!;
  t.match(two, { verdict: 'wrong', problem: /2 SPF records.*Merge them into one that includes spf.mail.test/ });
});

t.test(
  'DKIM: our key with extra tags or folded whitespace counts; another key, or another key type, does not',
  async (t) => {
    const dkim = (...txt: string[]) => checkDomain(SETUP, { ...published, dkim: found(...txt) }).records[2]!;
    t.equal(dkim(`v=DKIM1; h=sha256; k=rsa; t=y; s=email; p=${KEY}`).status, 'found');
    t.equal(dkim(`k=rsa;p=${KEY.slice(0, 20)} ${KEY.slice(20)}`).status, 'found', 'no v tag; p folded with a space');
    t.equal(dkim(`p=${KEY}`).status, 'found', 'k defaults to rsa');
    t.match(dkim('v=DKIM1; k=rsa; p=MIIBIjANotOurs'), {
      status: 'missing',
      verdict: 'wrong',
      problem: /holds a DKIM record with another key/,
    });
    t.match(dkim(`v=DKIM1; k=ed25519; p=${KEY}`), { verdict: 'wrong' });
    t.match(dkim('v=DKIM1; k=rsa; p='), { verdict: 'wrong' }, 'a revoked key');
    t.match(
      dkim(`v=DKIM1; p=${KEY}`, 'v=DKIM1; p=Other'),
      { verdict: 'wrong' },
      'two records at one selector, one not ours',
    );
  },
);

t.test('MX: ours must be among the most preferred', async (t) => {
  const mx = (...answers: MxAnswer[]) => checkDomain(SETUP, { ...published, receiving: found(...answers) });
  t.equal(mx({ exchange: 'MX.Mail.Test.', priority: 10 }).receiving.verified, true, 'case and root dot');
  t.equal(
    mx({ exchange: 'mx.mail.test', priority: 5 }, { exchange: 'backup.other.test', priority: 20 }).receiving.verified,
    true,
    'a backup behind ours',
  );
  t.equal(
    mx({ exchange: 'mx.mail.test', priority: 10 }, { exchange: 'other.test', priority: 10 }).receiving.verified,
    true,
    'shared with an equal',
  );
  const behind = mx({ exchange: 'aspmx.l.google.com', priority: 1 }, { exchange: 'mx.mail.test', priority: 10 });
  t.same(behind.receiving, {
    verified: false,
    error:
      'The MX records of example.com (1 aspmx.l.google.com, 10 mx.mail.test) do not send mail to mx.mail.test first.',
  });
  t.equal(mx({ exchange: '', priority: 0 }).receiving.verified, false, 'a null MX (RFC 7505)');
});

t.test('CNAMEs: the target must be ours', async (t) => {
  const check = checkDomain(SETUP, {
    ...published,
    return_path: found('BOUNCES.mail.test.'),
    tracking: found('links.other.test'),
  });
  t.match(check.records[4], { status: 'found' });
  t.match(check.records[5], {
    status: 'missing',
    verdict: 'wrong',
    problem: 'track.example.com points to links.other.test, not track.mail.test.',
  });
});

t.test('DMARC record status: any valid DMARC record is found (its policy is graded in the report)', async (t) => {
  const dmarc = (...txt: string[]) => statuses({ ...published, dmarc: found(...txt) }).dmarc;
  t.equal(dmarc('v=DMARC1; p=none'), 'found');
  t.equal(dmarc('some-verification=1', 'v=DMARC1; p=quarantine'), 'found', 'other TXT ignored');
  t.equal(dmarc('v=DMARC1; p=maybe'), 'missing', 'invalid');
  t.equal(dmarc('v=DMARC1; p=none', 'v=DMARC1; p=reject'), 'missing', 'two records');
});

t.test('sending: verified with DKIM and either SPF or the return path', async (t) => {
  t.equal(checkDomain(SETUP, { ...published, spf: missing }).sending.status, 'verified', 'return path without SPF');
  t.equal(
    checkDomain(SETUP, { ...published, return_path: missing }).sending.status,
    'verified',
    'SPF without return path',
  );
  t.equal(
    checkDomain(SETUP, { ...published, spf: found('v=spf1 include:other.test -all') }).sending.status,
    'verified',
    'SPF wrong, return path found',
  );
  t.equal(checkDomain(SETUP, { ...published, spf: missing, return_path: missing }).sending.status, 'pending');
  t.equal(checkDomain(SETUP, { ...published, dkim: missing }).sending.status, 'pending');
  t.equal(
    checkDomain(SETUP, { ...published, tracking: missing, dmarc: missing, receiving: missing }).sending.status,
    'verified',
    'tracking, DMARC and MX do not decide sending',
  );
});

t.test('sending: failed when what is published is wrong, pending while something can still be published', async (t) => {
  const wrongKey = found('v=DKIM1; p=NotOurs');
  const wrongSpf = found('v=spf1 include:other.test -all');
  const wrongReturnPath = found('elsewhere.test');
  t.equal(checkDomain(SETUP, { ...published, dkim: wrongKey }).sending.status, 'failed', 'another DKIM key');
  t.equal(
    checkDomain(SETUP, { ...published, spf: wrongSpf, return_path: wrongReturnPath }).sending.status,
    'failed',
    'both paths wrong',
  );
  t.equal(
    checkDomain(SETUP, { ...published, spf: wrongSpf, return_path: missing }).sending.status,
    'pending',
    'SPF of another sender, return path not yet published',
  );
  const failed = checkDomain(SETUP, {
    ...published,
    dkim: wrongKey,
    spf: wrongSpf,
    return_path: wrongReturnPath,
  }).sending;
  t.match(failed.error, /another key.*does not include spf.mail.test.*points to elsewhere.test/);
});

t.test('sending: unknown when DNS did not answer for what decides it; failed still wins when known', async (t) => {
  const check = checkDomain(SETUP, { ...published, dkim: servfail });
  t.equal(check.sending.status, 'unknown');
  t.match(check.sending.error, /lookup of TXT wms202601._domainkey.example.com failed \(servfail\)/);
  t.equal(check.records[2]!.status, null, 'a failed lookup leaves the record unchecked');
  t.equal(checkDomain(SETUP, { ...published, spf: servfail, return_path: missing }).sending.status, 'unknown');
  t.equal(checkDomain(SETUP, { ...published, spf: servfail }).sending.status, 'verified', 'the return path decides it');
  t.equal(
    checkDomain(SETUP, { ...published, dkim: found('p=NotOurs'), spf: servfail, return_path: servfail }).sending.status,
    'failed',
  );
  t.equal(checkDomain(SETUP, { ...published, receiving: servfail }).receiving.verified, false);
});

t.test('sending: no_identity when the domain holds no DKIM key', async (t) => {
  const check = checkDomain({ ...SETUP, dkim: null }, published);
  t.same(check.sending, { status: 'no_identity', error: 'The domain has no DKIM key to sign with.' });
  t.equal(check.receiving.verified, true, 'receiving does not need the key');
});

t.test(
  'canSend: a fresh negative verdict stops sending; an unknown one keeps a verification the domain once had',
  async (t) => {
    const now = '2026-03-10T12:00:00.000Z';
    const hoursAgo = (hours: number) => new Date(Date.parse(now) - hours * 3_600_000).toISOString();
    const day = hoursAgo(24);
    const pastDay = new Date(Date.parse(day) - 1).toISOString();
    t.equal(canSend({ status: 'verified', checkedAt: hoursAgo(1), everVerified: true }, now), true);
    t.equal(
      canSend({ status: 'verified', checkedAt: hoursAgo(100), everVerified: true }, now),
      true,
      'a positive verdict does not age',
    );
    t.equal(canSend({ status: 'pending', checkedAt: hoursAgo(1), everVerified: true }, now), false, 'fresh pending');
    t.equal(canSend({ status: 'failed', checkedAt: hoursAgo(1), everVerified: true }, now), false, 'fresh failed');
    t.equal(
      canSend({ status: 'pending', checkedAt: day, everVerified: true }, now),
      false,
      'a day old exactly: still trusted',
    );
    t.equal(
      canSend({ status: 'pending', checkedAt: pastDay, everVerified: true }, now),
      true,
      'older than a day: unknown, so canSend while status is pending',
    );
    t.equal(effectiveVerdict({ status: 'pending', checkedAt: pastDay, everVerified: true }, now), 'unknown');
    t.equal(canSend({ status: 'failed', checkedAt: pastDay, everVerified: true }, now), true);
    t.equal(
      canSend({ status: 'pending', checkedAt: pastDay, everVerified: false }, now),
      false,
      'never verified: unknown does not open sending',
    );
    t.equal(
      canSend({ status: 'unknown', checkedAt: hoursAgo(1), everVerified: true }, now),
      true,
      'a DNS outage does not stop a working domain',
    );
    t.equal(canSend({ status: 'unknown', checkedAt: hoursAgo(1), everVerified: false }, now), false);
    t.equal(canSend({ status: 'pending', checkedAt: null, everVerified: false }, now), false, 'never checked');
    t.equal(
      canSend({ status: 'no_identity', checkedAt: pastDay, everVerified: true }, now),
      false,
      'no key, no sending',
    );
  },
);
