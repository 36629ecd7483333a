import MailComposer from 'nodemailer/lib/mail-composer';
import t from 'tap';
import { spamVerdict } from '../../domain/messages/spam.ts';
import { RspamdFilter } from '../../infra/spam/rspamd.ts';
import { freeTcpPort, startDnsServer } from '../support/dns-server.ts';
import { rspamdInstalled, startRspamd } from '../support/rspamd.ts';

/** The GTUBE line (rspamd's and SpamAssassin's test pattern): a real filter rejects it outright. */
const GTUBE = 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X';

async function message(text: string): Promise<Buffer> {
  const raw = await new MailComposer({
    from: 'Carol <carol@outside.test>',
    to: 'Ann <ann@ours.test>',
    subject: 'Minutes of Tuesday',
    text,
    date: new Date(),
    messageId: `<m-${Date.now()}@outside.test>`,
  })
    .compile()
    .build();
  const received = `Received: from mail.outside.test ([192.0.2.10])\r\n\tby mx.ours.test with ESMTP id q1; ${new Date().toUTCString()}\r\n`;
  return Buffer.concat([Buffer.from(received), raw]);
}

const question = (raw: Buffer) => ({
  raw,
  ip: '192.0.2.10',
  helo: 'mail.outside.test',
  mailFrom: 'carol@outside.test',
  rcptTo: ['ann@ours.test'],
  queueId: 'q1',
});

const noDmarc = { dmarc: null };

t.test('a filter that cannot be reached gives no verdict; mail goes on on authentication alone', async (t) => {
  const closed = await freeTcpPort();
  const errors: unknown[] = [];
  const filter = new RspamdFilter({ url: `http://127.0.0.1:${closed}`, onError: (e) => errors.push(e) });
  const verdict = await filter.check(question(await message('Hello')));
  t.equal(verdict, null);
  t.equal(errors.length, 1);
  t.same(spamVerdict(noDmarc, verdict), { spam: false, reasons: [], score: null });
  t.same(spamVerdict({ dmarc: { result: 'fail', fromDomain: 'x.test', policy: 'reject', testing: false } }, verdict), {
    spam: true,
    reasons: ['dmarc_reject'],
    score: null,
  });
});

t.test(
  'a real rspamd: an ordinary message passes, GTUBE is rejected',
  { skip: !rspamdInstalled() && 'rspamd is not installed (apt-get install rspamd)', timeout: 400_000 },
  async (t) => {
    const dns = await startDnsServer(t);
    dns.set('outside.test', {
      A: ['192.0.2.10'],
      MX: [{ exchange: 'mail.outside.test', priority: 10 }],
      TXT: ['v=spf1 ip4:192.0.2.10 -all'],
    });
    dns.set('mail.outside.test', { A: ['192.0.2.10'] });
    dns.set('10.2.0.192.in-addr.arpa', {});
    const rspamd = await startRspamd(t, dns.address);
    const filter = new RspamdFilter({ url: rspamd.url, timeoutMs: 30_000 });

    const ham = await filter.check(
      question(await message('The minutes are below. We agreed to meet again next week.\n')),
    );
    t.ok(ham, 'rspamd answered');
    // Its score is low but not always nil on loopback (no reverse DNS, RBLs answering NXDOMAIN):
    // "no action" or "greylist", never an action that marks or refuses.
    t.ok(['no action', 'greylist'].includes(ham!.action), `${ham!.action}: ${ham!.symbols.join(', ')}`);
    t.ok(ham!.score < ham!.requiredScore);
    t.same(spamVerdict(noDmarc, ham), { spam: false, reasons: [], score: ham!.score });

    const spam = await filter.check(question(await message(`Buy now.\n${GTUBE}\n`)));
    t.equal(spam?.action, 'reject');
    t.same(spamVerdict(noDmarc, spam), { spam: true, reasons: ['filter'], score: spam!.score });
  },
);

t.test('spamVerdict: filter actions that mark or refuse are spam, greylisting is not', async (t) => {
  const filter = (action: string) => ({ action, score: 7, requiredScore: 15, symbols: [] });
  for (const action of ['add header', 'rewrite subject', 'reject'])
    t.equal(spamVerdict(noDmarc, filter(action)).spam, true, action);
  for (const action of ['no action', 'greylist', 'soft reject'])
    t.equal(spamVerdict(noDmarc, filter(action)).spam, false, action);
  t.same(
    spamVerdict(
      { dmarc: { result: 'fail', fromDomain: 'x.test', policy: 'quarantine', testing: false } },
      filter('reject'),
    ),
    { spam: true, reasons: ['dmarc_quarantine', 'filter'], score: 7 },
  );
});
