import { simpleParser, type AddressObject } from 'mailparser';
import t, { type Test } from 'tap';
import { generateDkimKeyPair } from '../../infra/dkim/keys.ts';
import { NodeDns } from '../../infra/dns/resolver.ts';
import { composeMessage } from '../../infra/outbound/compose.ts';
import type { DeliveryRequest } from '../../infra/outbound/delivery.ts';
import { DirectDelivery, type DirectDeliveryOptions } from '../../infra/outbound/direct.ts';
import { signMessage } from '../../infra/outbound/dkim.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { sharedFreePort, startMxServer, startSilentServer } from '../support/mx-server.ts';
import { binary, DOMAIN, fullMessage, publishDkim, SELECTOR, verifyDkim } from '../support/outbound.ts';

const RCPT_DOMAIN = 'example.org';
const RETURN_PATH = `bounce+msg_1@bounces.${DOMAIN}`;
/** Loopback addresses the MX hosts of a test live on; only the ones given a server answer. */
const ADDRESS = { one: '127.0.0.1', two: '127.0.0.2', three: '127.0.0.3' } as const;

async function setup(t: Test, options: Partial<DirectDeliveryOptions> = {}) {
  const dns = await startDnsServer(t);
  const port = await sharedFreePort(Object.values(ADDRESS));
  const delivery = new DirectDelivery({
    dns: new NodeDns({ servers: [dns.address], timeoutMs: 3000 }),
    heloName: 'mta.sender.test',
    port,
    allowPrivateAddresses: true,
    ...options,
  });
  t.teardown(() => delivery.close());
  return { dns, port, delivery };
}

let signedOnce: Promise<{ raw: Buffer; publicKey: Awaited<ReturnType<typeof generateDkimKeyPair>> }> | undefined;
/** The full test message, signed once for the file. */
function signed() {
  signedOnce ??= (async () => {
    const key = await generateDkimKeyPair();
    const { raw } = await composeMessage(fullMessage());
    return {
      raw: await signMessage(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem }),
      publicKey: key,
    };
  })();
  return signedOnce;
}

async function request(recipients = ['ann@example.org']): Promise<DeliveryRequest> {
  return { mailFrom: RETURN_PATH, recipients, raw: (await signed()).raw };
}

const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : []).flatMap((group) => group.value.map((entry) => entry.address));

t.test('250: delivered to the MX; the mail arrives whole and its DKIM signature verifies', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: [ADDRESS.one] });
  const mx = await startMxServer(t, ADDRESS.one, port);

  const outcomes = await delivery.deliver(
    await request(['ann@example.org', 'bob@example.org', 'carol@example.org', 'hidden@example.org']),
  );
  t.equal(outcomes.length, 4);
  for (const outcome of outcomes) {
    t.match(
      outcome,
      { status: 'delivered', code: 250, enhancedCode: null, mx: 'mx.example.org', tls: false },
      'smtp-server gives no enhanced code with 250',
    );
    t.match(outcome.response, /^250 /);
  }
  t.equal(mx.received.length, 1, 'one message for the four recipients');
  const [received] = mx.received;
  t.equal(received?.mailFrom, RETURN_PATH, 'MAIL FROM is the return path');
  t.same(received?.rcptTo, ['ann@example.org', 'bob@example.org', 'carol@example.org', 'hidden@example.org']);

  const mail = await simpleParser(received!.raw, { keepCidLinks: true });
  const sent = fullMessage();
  t.same(addresses(mail.from), [`news@${DOMAIN}`]);
  t.same(addresses(mail.to), ['ann@example.org', 'bob@example.org']);
  t.same(addresses(mail.cc), ['carol@example.org']);
  t.notOk(received!.raw.includes('hidden@example.org'), 'the bcc recipient is in the envelope only');
  t.equal(mail.subject, sent.subject);
  t.equal(mail.text, sent.text);
  t.equal(mail.html, sent.html);
  t.equal(mail.headers.get('x-campaign'), 'spring-2026');
  t.ok(
    mail.attachments.find((a) => a.filename === 'bytes.bin')?.content.equals(Buffer.from(binary)),
    'the binary attachment is intact',
  );
  t.equal(mail.attachments.find((a) => a.filename === 'logo.png')?.cid, 'logo@sender');

  publishDkim(dns, (await signed()).publicKey);
  const [dkim] = await verifyDkim(dns, received!.raw);
  t.equal(dkim?.status.result, 'pass', 'DKIM verifies against the published key');
});

t.test('STARTTLS: used when offered, with a self-signed certificate; plaintext when not offered', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'tls.example.org', priority: 10 }] });
  dns.set('tls.example.org', { A: [ADDRESS.one] });
  dns.set('example.net', { MX: [{ exchange: 'plain.example.net', priority: 10 }] });
  dns.set('plain.example.net', { A: [ADDRESS.two] });
  const tls = await startMxServer(t, ADDRESS.one, port, { starttls: true });
  const plain = await startMxServer(t, ADDRESS.two, port);

  const [overTls] = await delivery.deliver(await request(['ann@example.org']));
  t.match(overTls, { status: 'delivered', code: 250, tls: true });
  t.equal(tls.received[0]?.secure, true, 'the server saw a TLS session');

  const [overPlain] = await delivery.deliver({ ...(await request()), recipients: ['dan@example.net'] });
  t.match(overPlain, { status: 'delivered', code: 250, tls: false });
  t.equal(plain.received[0]?.secure, false);
});

t.test('4xx then 250: deferred with the reply, delivered on the next try over the same session', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: [ADDRESS.one] });
  const mx = await startMxServer(t, ADDRESS.one, port, {
    data: (n) => (n === 1 ? { code: 451, message: '4.7.1 Greylisted, try again later' } : null),
  });

  const [first] = await delivery.deliver(await request());
  t.match(first, {
    recipient: 'ann@example.org',
    status: 'deferred',
    code: 451,
    enhancedCode: '4.7.1',
    mx: 'mx.example.org',
  });
  t.match(first?.response, /^451 4\.7\.1 Greylisted/);
  t.equal(mx.received.length, 0);

  const [second] = await delivery.deliver(await request());
  t.match(second, { status: 'delivered', code: 250 });
  t.equal(mx.received.length, 1);
  t.equal(mx.connections(), 1, 'the session was reset and reused, not reopened');
});

t.test('5xx: the recipient bounces with the reply', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: [ADDRESS.one] });
  const mx = await startMxServer(t, ADDRESS.one, port, {
    rcpt: () => ({ code: 550, message: '5.1.1 No such user here' }),
  });

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'bounced', code: 550, enhancedCode: '5.1.1', mx: 'mx.example.org' });
  t.match(outcome?.response, /^550 5\.1\.1 No such user here/);
  t.equal(mx.received.length, 0);
});

t.test('a mixed RCPT answer: two of three delivered, the refused one bounces', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: [ADDRESS.one] });
  const mx = await startMxServer(t, ADDRESS.one, port, {
    rcpt: (address) => (address === 'bob@example.org' ? { code: 550, message: '5.1.1 No such user here' } : null),
  });

  const outcomes = await delivery.deliver(await request(['ann@example.org', 'bob@example.org', 'carol@example.org']));
  t.same(
    outcomes.map((o) => [o.recipient, o.status, o.code]),
    [
      ['ann@example.org', 'delivered', 250],
      ['bob@example.org', 'bounced', 550],
      ['carol@example.org', 'delivered', 250],
    ],
  );
  t.same(mx.received[0]?.rcptTo, ['ann@example.org', 'carol@example.org'], 'sent once, to the two accepted');
});

t.test('a refusal at RCPT stands when the message itself is then deferred', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: [ADDRESS.one] });
  await startMxServer(t, ADDRESS.one, port, {
    rcpt: (address) => (address === 'bob@example.org' ? { code: 550, message: '5.1.1 No such user here' } : null),
    data: () => ({ code: 452, message: '4.3.1 Insufficient system storage' }),
  });

  const outcomes = await delivery.deliver(await request(['ann@example.org', 'bob@example.org', 'carol@example.org']));
  t.same(
    outcomes.map((o) => [o.recipient, o.status, o.code, o.enhancedCode]),
    [
      ['ann@example.org', 'deferred', 452, '4.3.1'],
      ['bob@example.org', 'bounced', 550, '5.1.1'],
      ['carol@example.org', 'deferred', 452, '4.3.1'],
    ],
  );
});

t.test('connection refused: the next MX by preference takes the mail', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, {
    MX: [
      { exchange: 'backup.example.org', priority: 20 },
      { exchange: 'primary.example.org', priority: 10 },
    ],
  });
  dns.set('primary.example.org', { A: [ADDRESS.two] });
  dns.set('backup.example.org', { A: [ADDRESS.one] });
  const backup = await startMxServer(t, ADDRESS.one, port);

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'delivered', code: 250, mx: 'backup.example.org' });
  t.equal(backup.received.length, 1);
});

t.test('no MX reachable: deferred, in our words, naming the last host tried', async (t) => {
  const { dns, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, {
    MX: [
      { exchange: 'primary.example.org', priority: 10 },
      { exchange: 'backup.example.org', priority: 20 },
    ],
  });
  dns.set('primary.example.org', { A: [ADDRESS.two] });
  dns.set('backup.example.org', { A: [ADDRESS.three] });

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'deferred', code: null, enhancedCode: '4.4.1', mx: 'backup.example.org', tls: null });
  t.match(outcome?.response, /127\.0\.0\.3.*ECONNREFUSED/);
});

t.test('a server that never greets is passed over after the greeting timeout', async (t) => {
  const { dns, port, delivery } = await setup(t, { greetingTimeoutMs: 500 });
  dns.set(RCPT_DOMAIN, {
    MX: [
      { exchange: 'slow.example.org', priority: 10 },
      { exchange: 'fast.example.org', priority: 20 },
    ],
  });
  dns.set('slow.example.org', { A: [ADDRESS.two] });
  dns.set('fast.example.org', { A: [ADDRESS.one] });
  const slow = await startSilentServer(t, ADDRESS.two, port);
  const fast = await startMxServer(t, ADDRESS.one, port);

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'delivered', mx: 'fast.example.org' });
  t.equal(slow.connections(), 1, 'the silent server was tried first');
  t.equal(fast.received.length, 1);
});

t.test('a server silent after the message: deferred, and not sent again elsewhere', async (t) => {
  const { dns, port, delivery } = await setup(t, { socketTimeoutMs: 500 });
  dns.set(RCPT_DOMAIN, {
    MX: [
      { exchange: 'slow.example.org', priority: 10 },
      { exchange: 'other.example.org', priority: 20 },
    ],
  });
  dns.set('slow.example.org', { A: [ADDRESS.one] });
  dns.set('other.example.org', { A: [ADDRESS.two] });
  await startMxServer(t, ADDRESS.one, port, { dataDelayMs: 10_000 });
  const other = await startMxServer(t, ADDRESS.two, port);

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'deferred', code: null, enhancedCode: '4.4.2', mx: 'slow.example.org' });
  t.match(outcome?.response, /after the message was sent/);
  t.equal(other.connections(), 0, 'the message may have arrived: no second copy');
});

t.test('a null MX (RFC 7505) bounces at once; nothing is contacted', async (t) => {
  const { dns, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: '', priority: 0 }] });

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'bounced', code: null, enhancedCode: '5.1.10', mx: null });
  t.match(outcome?.response, /null MX/);
  t.notOk(
    dns.queries.some((q) => q.type === 'A'),
    'no address was looked up',
  );
});

t.test('no MX but an A record: the domain itself is the mail host', async (t) => {
  const { dns, port, delivery } = await setup(t);
  dns.set(RCPT_DOMAIN, { A: [ADDRESS.one] });
  const host = await startMxServer(t, ADDRESS.one, port);

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'delivered', mx: RCPT_DOMAIN });
  t.equal(host.received.length, 1);
});

t.test('no MX and no address: bounced; a failed lookup: deferred', async (t) => {
  const { dns, delivery } = await setup(t);
  const [nowhere] = await delivery.deliver(await request(['someone@nowhere.example.org']));
  t.match(nowhere, { status: 'bounced', code: null, enhancedCode: '5.1.2', mx: null });

  dns.misbehave(RCPT_DOMAIN, { kind: 'servfail' });
  const [servfail] = await delivery.deliver(await request());
  t.match(servfail, { status: 'deferred', code: null, enhancedCode: '4.4.3' });
  t.match(servfail?.response, /servfail/);

  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.misbehave('mx.example.org', { kind: 'servfail' });
  const [hostLookup] = await delivery.deliver(await request());
  t.match(hostLookup, { status: 'deferred', enhancedCode: '4.4.3', mx: 'mx.example.org' });

  dns.set('mx.example.org', {});
  const [noAddress] = await delivery.deliver(await request());
  t.match(noAddress, { status: 'bounced', enhancedCode: '5.4.4', mx: null });
});

t.test('MX hosts on private or loopback addresses are not contacted unless allowed', async (t) => {
  const { dns, port, delivery } = await setup(t, { allowPrivateAddresses: false });
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'inside.example.org', priority: 10 }] });
  dns.set('inside.example.org', { A: [ADDRESS.one, '10.1.2.3', '169.254.169.254'] });
  const inside = await startMxServer(t, ADDRESS.one, port);

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'bounced', enhancedCode: '5.4.4' });
  t.equal(inside.connections(), 0);
});

t.test('MX hosts of equal preference are tried in random order', async (t) => {
  const draws = [0.9, 0.1];
  const { dns, port, delivery } = await setup(t, { random: () => draws.shift() ?? 0.5 });
  dns.set(RCPT_DOMAIN, {
    MX: [
      { exchange: 'a.example.org', priority: 10 },
      { exchange: 'b.example.org', priority: 10 },
    ],
  });
  dns.set('a.example.org', { A: [ADDRESS.one] });
  dns.set('b.example.org', { A: [ADDRESS.two] });
  const a = await startMxServer(t, ADDRESS.one, port);
  const b = await startMxServer(t, ADDRESS.two, port);

  const [outcome] = await delivery.deliver(await request());
  t.match(outcome, { status: 'delivered', mx: 'b.example.org' }, 'the lower draw goes first');
  t.same([a.received.length, b.received.length], [0, 1]);
});

t.test('per-host limit: many deliveries at once share at most that many sessions', async (t) => {
  const { dns, port, delivery } = await setup(t, { maxConnectionsPerHost: 2 });
  dns.set(RCPT_DOMAIN, { MX: [{ exchange: 'mx.example.org', priority: 10 }] });
  dns.set('mx.example.org', { A: [ADDRESS.one] });
  const mx = await startMxServer(t, ADDRESS.one, port, { dataDelayMs: 20 });

  const base = await request();
  const outcomes = await Promise.all(
    Array.from({ length: 12 }, (_, i) => delivery.deliver({ ...base, recipients: [`user${i}@example.org`] })),
  );
  t.ok(
    outcomes.every(([o]) => o?.status === 'delivered'),
    'all delivered',
  );
  t.equal(mx.received.length, 12);
  t.ok(mx.peakConnections() <= 2, `at most 2 sessions at once (saw ${mx.peakConnections()})`);
  t.ok(mx.connections() <= 2, `sessions reused (opened ${mx.connections()})`);
  t.ok(mx.openConnections() > 0, 'idle sessions are kept for the next message');

  await delivery.close();
  for (let waited = 0; mx.openConnections() > 0 && waited < 10_000; waited += 50)
    await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(mx.openConnections(), 0, 'close() ends the idle sessions');
});

t.test('a malformed request is refused before anything is sent', async (t) => {
  const { delivery } = await setup(t);
  await t.rejects(delivery.deliver({ ...(await request()), recipients: ['a@example.org', 'b@example.net'] }), {
    name: 'TypeError',
    message: /one domain/,
  });
  await t.rejects(delivery.deliver({ ...(await request()), recipients: [] }), TypeError);
  await t.rejects(delivery.deliver({ ...(await request()), recipients: ['not an address'] }), TypeError);
  await delivery.close();
  await t.rejects(delivery.deliver(await request()), { message: /closed/ });
});
