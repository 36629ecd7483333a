import t from 'tap';
import { checkDomainName, MAX_DOMAIN, organizationalDomain } from '../../domain/domains/name.ts';
import { LONGEST_SELECTOR, nextDkimSelector } from '../../domain/domains/selector.ts';

const accepted = (input: string) => {
  const result = checkDomainName(input);
  return result.ok ? result.domain : `refused: ${result.reason}`;
};
const reason = (input: string) => {
  const result = checkDomainName(input);
  return result.ok ? `accepted as ${result.domain}` : result.reason;
};

t.test('a name is trimmed, lower-cased, and loses a trailing root dot', async (t) => {
  t.equal(accepted('  Example.COM  '), 'example.com');
  t.equal(accepted('example.com.'), 'example.com');
  t.equal(accepted('\tMail.Example.Com\n'), 'mail.example.com');
});

t.test('an IDN becomes punycode, full-width forms folded first (UTS 46)', async (t) => {
  t.equal(accepted('Bücher.example'), 'refused: "Bücher.example" is not under a known public suffix');
  t.equal(accepted('Bücher.de'), 'xn--bcher-kva.de');
  t.equal(accepted('ｅｘａｍｐｌｅ．ｃｏｍ'), 'example.com');
  t.equal(accepted('mail.münchen.de'), 'mail.xn--mnchen-3ya.de');
  t.equal(accepted('xn--bcher-kva.de'), 'xn--bcher-kva.de', 'punycode already is accepted as is');
  t.match(reason('xn--zz.de'), /not a valid domain name/, 'broken punycode');
});

t.test('subdomains of a registrable domain are allowed, under ICANN and private suffixes alike', async (t) => {
  t.equal(accepted('news.example.com'), 'news.example.com');
  t.equal(accepted('a.b.c.example.co.uk'), 'a.b.c.example.co.uk');
  t.equal(accepted('example.co.uk'), 'example.co.uk');
  t.equal(accepted('me.github.io'), 'me.github.io');
});

t.test('a bare public suffix is refused', async (t) => {
  for (const suffix of ['com', 'co.uk', 'github.io', 'blogspot.com', 'CO.UK.']) {
    t.match(reason(suffix), /public suffix|top-level name/, suffix);
  }
  t.match(reason('co.uk'), /"co.uk" is a public suffix; add a domain registered under it/);
  t.match(reason('com'), /"com" is a top-level name/);
});

t.test('a name under no known suffix is refused', async (t) => {
  for (const name of ['localhost', 'mail.local', 'example.invalid', 'printer.internal', 'example.test']) {
    t.match(reason(name), /not under a known public suffix|top-level name/, name);
  }
});

t.test('an IP address is refused, however it is written', async (t) => {
  for (const ip of [
    '192.0.2.1',
    ' 192.0.2.1 ',
    '2001:db8::1',
    '[2001:db8::1]',
    '::1',
    '1.2.3',
    '0x7f.1',
    '3232235777',
  ]) {
    t.match(reason(ip), /is an IP address, not a domain/, ip);
  }
});

t.test('labels: letters, digits and hyphens, 1 to 63, no hyphen at either end', async (t) => {
  const label63 = 'a'.repeat(63);
  t.equal(accepted(`${label63}.com`), `${label63}.com`, '63 is the edge');
  t.match(reason(`${label63}a.com`), /label longer than 63/, 'one past');
  t.match(reason('a_b.example.com'), /only letters, digits and hyphens/);
  t.match(reason('-mail.example.com'), /no label may start or end with a hyphen/);
  t.match(reason('mail-.example.com'), /no label may start or end with a hyphen/);
  t.match(reason('mail..example.com'), /empty label/);
  t.match(reason('.example.com'), /empty label/);
  for (const name of [
    'ex ample.com',
    'example.com/path',
    'example.com?x',
    'example.com#x',
    'ex%41mple.com',
    'exa\\mple.com',
    'a*b.com',
    'user@example.com',
    'example.com\tx',
  ]) {
    t.match(reason(name), /only letters, digits and hyphens/, `${JSON.stringify(name)}: URL syntax is not a name`);
  }
  t.equal(accepted('1-2.example.com'), '1-2.example.com', 'digits and inner hyphens');
});

t.test('the whole name: at most what leaves room for its DKIM record name within 253', async (t) => {
  t.equal(MAX_DOMAIN, 253 - LONGEST_SELECTOR - '._domainkey.'.length);
  // Labels of 49 letters and a dot, then one of the rest, then `.com`.
  const name = (length: number) => {
    const units = Math.floor((length - 5) / 50);
    return `${`${'a'.repeat(49)}.`.repeat(units)}${'a'.repeat(length - 4 - 50 * units)}.com`;
  };
  const edge = name(MAX_DOMAIN);
  t.equal(edge.length, MAX_DOMAIN);
  t.equal(accepted(edge), edge, 'the edge');
  const past = `b${edge}`;
  t.match(reason(past), new RegExp(`too long: at most ${MAX_DOMAIN} characters`), 'one past');
  t.match(reason(`${`${'a'.repeat(63)}.`.repeat(4)}com`), /too long/);
});

t.test('empty input is refused', async (t) => {
  t.equal(reason(''), 'domain must not be empty');
  t.equal(reason('   '), 'domain must not be empty');
  t.equal(reason('.'), 'domain must not be empty');
});

t.test('a long refused input is shortened in the message', async (t) => {
  const message = reason(`${'x_'.repeat(200)}.com`);
  t.ok(message.length < 200, message);
});

t.test('the organizational domain is the registrable part', async (t) => {
  t.equal(organizationalDomain('news.example.co.uk'), 'example.co.uk');
  t.equal(organizationalDomain('example.com'), 'example.com');
  t.equal(organizationalDomain('a.me.github.io'), 'me.github.io');
});

t.test('DKIM selectors: wms<yyyymm>, then a counter within the month, so a rotation never reuses one', async (t) => {
  t.equal(nextDkimSelector('2026-01-15T10:00:00.000Z', []), 'wms202601');
  t.equal(nextDkimSelector('2026-01-31T23:59:59.999Z', ['wms202512']), 'wms202601');
  t.equal(nextDkimSelector('2026-01-20T00:00:00.000Z', ['wms202601']), 'wms202601-2');
  t.equal(nextDkimSelector('2026-01-20T00:00:00.000Z', ['wms202601', 'wms202601-2']), 'wms202601-3');
  t.equal(
    nextDkimSelector('2026-01-20T00:00:00.000Z', ['wms202601', 'wms202601-3']),
    'wms202601-2',
    'a free counter is taken',
  );
  t.ok(nextDkimSelector('2026-01-20T00:00:00.000Z', ['wms202601']).length <= LONGEST_SELECTOR);
  t.throws(() => nextDkimSelector('yesterday', []), RangeError);
});
