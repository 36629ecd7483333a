import t from 'tap';
import { checkDomain, type Observations } from '../../domain/domains/check.ts';
import { dmarcReport, parseDmarc, type DmarcInput } from '../../domain/domains/dmarc.ts';

const base: DmarcInput = {
  domain: 'example.com',
  own: { status: 'missing' },
  dkimFound: true,
  returnPathFound: true,
  returnPathName: 'bounces.example.com',
};
const record = (...records: string[]) => ({ status: 'found' as const, records });
const report = (own: DmarcInput['own'], extra: Partial<DmarcInput> = {}) => dmarcReport({ ...base, own, ...extra });
const codes = (own: DmarcInput['own'], extra: Partial<DmarcInput> = {}) =>
  report(own, extra)?.issues.map((issue) => issue.code);

t.test('parse: tags in any case and spacing; v first; p required; values checked', async (t) => {
  t.same(
    parseDmarc(
      'v=DMARC1; p=reject; sp=quarantine; pct=50; adkim=s; aspf=r; rua=mailto:a@example.com,mailto:b@example.net!10m; fo=1',
    ),
    {
      p: 'reject',
      sp: 'quarantine',
      pct: 50,
      adkim: 's',
      aspf: 'r',
      rua: ['mailto:a@example.com', 'mailto:b@example.net!10m'],
    },
  );
  t.same(parseDmarc(' v = DMARC1 ;P=Quarantine;'), {
    p: 'quarantine',
    sp: null,
    pct: 100,
    adkim: 'r',
    aspf: 'r',
    rua: [],
  });
  t.equal(parseDmarc('p=reject; v=DMARC1'), 'it does not start with v=DMARC1');
  t.equal(parseDmarc('v=DMARC1; rua=mailto:a@example.com'), 'it has no p tag');
  t.equal(parseDmarc('v=DMARC1; p=block'), 'p=block is not none, quarantine or reject');
  t.equal(parseDmarc('v=DMARC1; p=none; pct=101'), 'pct=101 is not a number from 0 to 100');
  t.equal(parseDmarc('v=DMARC1; p=none; aspf=x'), 'aspf=x is not r or s');
  t.equal(parseDmarc('v=DMARC1; p'), '"p" is not a tag=value pair');
});

t.test('given no DMARC record, then stage none and the no_record issue; alignment still told', async (t) => {
  t.same(report({ status: 'missing' }), {
    stage: 'none',
    record: null,
    issues: [
      {
        code: 'no_record',
        message:
          'No DMARC record at _dmarc.example.com: receivers apply no policy, and large mailbox providers expect one from bulk senders.',
      },
    ],
    alignmentPossible: true,
    caveat: null,
  });
  t.same(codes(record('v=spf1 -all')), ['no_record'], 'a TXT record that is not DMARC');
});

t.test('stages follow the policy: monitoring, quarantine, reject', async (t) => {
  t.match(report(record('v=DMARC1; p=none; rua=mailto:d@example.com')), {
    stage: 'monitoring',
    record: 'v=DMARC1; p=none; rua=mailto:d@example.com',
  });
  t.same(codes(record('v=DMARC1; p=none; rua=mailto:d@example.com')), ['monitoring_only']);
  t.match(report(record('v=DMARC1; p=quarantine; rua=mailto:d@example.com')), { stage: 'quarantine' });
  t.same(codes(record('v=DMARC1; p=quarantine; rua=mailto:d@example.com')), []);
  t.match(report(record('v=DMARC1; p=reject; rua=mailto:d@example.com')), { stage: 'reject', caveat: null });
  t.same(codes(record('v=DMARC1; p=reject; rua=mailto:d@example.com')), []);
});

t.test('issues: partial enforcement, a weaker subdomain policy, reports', async (t) => {
  t.same(codes(record('v=DMARC1; p=quarantine; pct=25; rua=mailto:d@example.com')), ['partial_enforcement']);
  t.same(
    codes(record('v=DMARC1; p=none; pct=25; rua=mailto:d@example.com')),
    ['monitoring_only'],
    'pct says nothing under p=none',
  );
  t.same(codes(record('v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com')), ['weaker_subdomain_policy']);
  t.same(
    codes(record('v=DMARC1; p=quarantine; sp=reject; rua=mailto:d@example.com')),
    [],
    'a stronger subdomain policy is fine',
  );
  t.same(codes(record('v=DMARC1; p=reject')), ['no_reports']);
  t.same(codes(record('v=DMARC1; p=reject; rua=https://reports.example.com/dmarc,mailto:d@example.com')), [
    'rua_not_mailto',
  ]);
  t.match(
    report(record('v=DMARC1; p=reject; rua=https://reports.example.com/dmarc'))!.issues[0]!.message,
    /rua=https:\/\/reports.example.com\/dmarc is not a mailto: address/,
  );
});

t.test('several or broken records: receivers apply none', async (t) => {
  t.match(report(record('v=DMARC1; p=reject', 'v=DMARC1; p=none')), { stage: 'none', record: null });
  t.same(codes(record('v=DMARC1; p=reject', 'v=DMARC1; p=none')), ['multiple_records']);
  t.match(report(record('v=DMARC1; p=strict')), {
    stage: 'none',
    record: 'v=DMARC1; p=strict',
    issues: [{ message: /p=strict is not none, quarantine or reject/ }],
  });
  t.same(codes(record('v=DMARC1; p=strict')), ['invalid_record']);
});

t.test('alignment: DKIM aligns in either mode; SPF only through the return path, relaxed', async (t) => {
  const strict = record('v=DMARC1; p=reject; aspf=s; adkim=s; rua=mailto:d@example.com');
  t.match(report(strict), {
    alignmentPossible: true,
    caveat: /Only DKIM aligns: aspf=s needs the return path to be example.com itself, and ours is bounces.example.com/,
  });
  t.same(codes(strict), ['strict_spf_alignment']);
  t.match(report(strict, { dkimFound: false }), { alignmentPossible: false });
  t.same(codes(strict, { dkimFound: false }), ['strict_spf_alignment', 'no_alignment']);
  const relaxed = record('v=DMARC1; p=reject; rua=mailto:d@example.com');
  t.match(report(relaxed, { dkimFound: false }), { alignmentPossible: true, caveat: /Only SPF aligns/ });
  t.match(report(relaxed, { returnPathFound: false }), {
    alignmentPossible: true,
    caveat: 'Only DKIM aligns until the return-path CNAME bounces.example.com is published.',
  });
  t.match(report(relaxed, { dkimFound: false, returnPathFound: false }), {
    alignmentPossible: false,
    issues: [{ message: /publish the DKIM record and the return-path CNAME bounces.example.com/ }],
  });
  t.same(codes(relaxed, { dkimFound: false, returnPathFound: false }), ['no_alignment']);
});

t.test('a subdomain without its own record: the organizational record applies, through sp', async (t) => {
  const sub = { domain: 'news.example.com', returnPathName: 'bounces.news.example.com' };
  const org = (...records: string[]) => ({ organizational: { domain: 'example.com', answer: record(...records) } });
  t.match(
    report({ status: 'missing' }, { ...sub, ...org('v=DMARC1; p=reject; sp=quarantine; rua=mailto:d@example.com') }),
    {
      stage: 'quarantine',
      record: 'v=DMARC1; p=reject; sp=quarantine; rua=mailto:d@example.com',
      caveat: /No DMARC record at _dmarc.news.example.com; the record of example.com applies/,
    },
  );
  t.same(
    codes({ status: 'missing' }, { ...sub, ...org('v=DMARC1; p=reject; sp=quarantine; rua=mailto:d@example.com') }),
    [],
    "sp below p is the parent's own choice",
  );
  t.match(
    report({ status: 'missing' }, { ...sub, ...org('v=DMARC1; p=reject; rua=mailto:d@example.com') }),
    { stage: 'reject' },
    'no sp: p applies',
  );
  t.match(report({ status: 'missing' }, { ...sub, ...org('v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com') }), {
    stage: 'monitoring',
  });
  t.same(codes({ status: 'missing' }, { ...sub, ...org('v=DMARC1; p=reject; sp=none; rua=mailto:d@example.com') }), [
    'monitoring_only',
  ]);
  t.match(
    report(record('v=DMARC1; p=none; rua=mailto:d@example.com'), { ...sub, ...org('v=DMARC1; p=reject') }),
    { stage: 'monitoring', caveat: null },
    'its own record wins',
  );
  t.match(
    report({ status: 'missing' }, { ...sub, organizational: { domain: 'example.com', answer: { status: 'missing' } } }),
    { stage: 'none' },
  );
  t.same(
    codes({ status: 'missing' }, { ...sub, organizational: { domain: 'example.com', answer: { status: 'missing' } } }),
    ['no_record'],
  );
  t.equal(
    report({ status: 'missing' }, { ...sub, organizational: { domain: 'example.com', answer: { status: 'failed' } } }),
    null,
    'the organizational lookup failed',
  );
});

t.test('DNS did not answer: no report', async (t) => {
  t.equal(report({ status: 'failed' }), null);
});

t.test('through checkDomain: the report uses what the check found for DKIM and the return path', async (t) => {
  const setup = {
    domain: 'news.example.com',
    hosts: {
      mx: 'mx.mail.test',
      spfInclude: 'spf.mail.test',
      returnPath: 'bounces.mail.test',
      tracking: 'track.mail.test',
      storage: 'files.mail.test',
    },
    dkim: { selector: 'wms202601', publicKey: 'KEY' },
  };
  const observations: Observations = {
    dkim: { status: 'missing' },
    return_path: { status: 'found', records: ['bounces.mail.test'] },
    dmarc: { status: 'missing' },
    organizational_dmarc: record('v=DMARC1; p=reject; aspf=s; rua=mailto:d@example.com'),
  };
  const dmarc = checkDomain(setup, observations).dmarc;
  t.match(dmarc, { stage: 'reject', alignmentPossible: false, caveat: /the record of example.com applies/ });
  t.same(
    dmarc?.issues.map((issue) => issue.code),
    ['strict_spf_alignment', 'no_alignment'],
  );
  t.equal(checkDomain(setup, { ...observations, dmarc: { status: 'failed', reason: 'timeout' } }).dmarc, null);
});
