import { simpleParser } from 'mailparser';
import t, { type Test } from 'tap';
import { generateDkimKeyPair } from '../../infra/dkim/keys.ts';
import { composeMessage } from '../../infra/outbound/compose.ts';
import { RelayDelivery } from '../../infra/outbound/relay.ts';
import { openDelivery } from '../../infra/outbound/select.ts';
import { DirectDelivery } from '../../infra/outbound/direct.ts';
import { NodeDns } from '../../infra/dns/resolver.ts';
import { signMessage } from '../../infra/outbound/dkim.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { sharedFreePort, startMxServer } from '../support/mx-server.ts';
import { DOMAIN, fullMessage, publishDkim, SELECTOR, verifyDkim } from '../support/outbound.ts';

const PASSWORD = 'relay-secret-pa55';
const RETURN_PATH = `bounce+msg_2@bounces.${DOMAIN}`;

async function relaySetup(t: Test) {
  const port = await sharedFreePort(['127.0.0.1']);
  const relay = await startMxServer(t, '127.0.0.1', port, {
    auth: { user: 'sender', pass: PASSWORD },
    rcpt: (address) => (address === 'gone@example.net' ? { code: 550, message: '5.1.1 Unknown recipient' } : null),
  });
  return { port, relay };
}

t.test('relay: logs in, hands the signed message over, and reads each recipient from its answer', async (t) => {
  const { port, relay } = await relaySetup(t);
  const dns = await startDnsServer(t);
  const key = await generateDkimKeyPair();
  publishDkim(dns, key);
  const { raw } = await composeMessage(fullMessage());
  const signed = await signMessage(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem });

  const delivery = new RelayDelivery(`smtp://sender:${PASSWORD}@127.0.0.1:${port}`);
  t.teardown(() => delivery.close());
  const outcomes = await delivery.deliver({
    mailFrom: RETURN_PATH,
    recipients: ['ann@example.org', 'gone@example.net', 'eve@example.com'],
    raw: signed,
  });
  t.same(
    outcomes.map((o) => [o.recipient, o.status, o.code, o.enhancedCode]),
    [
      ['ann@example.org', 'delivered', 250, null],
      ['gone@example.net', 'bounced', 550, '5.1.1'],
      ['eve@example.com', 'delivered', 250, null],
    ],
    'recipients of several domains in one hand-over',
  );
  t.equal(outcomes[0]?.mx, `smtp://127.0.0.1:${port}`);
  t.equal(outcomes[0]?.tls, null);

  const [received] = relay.received;
  t.equal(received?.user, 'sender', 'logged in');
  t.equal(received?.mailFrom, RETURN_PATH);
  t.same(received?.rcptTo, ['ann@example.org', 'eve@example.com']);
  t.ok(received?.raw.equals(signed), 'the relay got the signed bytes as they were');
  const mail = await simpleParser(received!.raw);
  t.equal(mail.subject, fullMessage().subject);
  const [dkim] = await verifyDkim(dns, received!.raw);
  t.equal(dkim?.status.result, 'pass');
});

t.test('relay: a refused login defers every recipient and never shows the password', async (t) => {
  const { port, relay } = await relaySetup(t);
  const delivery = new RelayDelivery(`smtp://sender:wrong-${PASSWORD}@127.0.0.1:${port}`);
  t.teardown(() => delivery.close());
  const { raw } = await composeMessage(fullMessage());
  const outcomes = await delivery.deliver({ mailFrom: RETURN_PATH, recipients: ['ann@example.org'], raw });
  t.match(outcomes, [{ recipient: 'ann@example.org', status: 'deferred', code: null }]);
  t.match(outcomes[0]?.response, /535/);
  t.notOk(JSON.stringify(outcomes).includes(PASSWORD), 'no password in the outcome');
  t.equal(relay.received.length, 0);
});

t.test('relay: an unreachable relay defers', async (t) => {
  const port = await sharedFreePort(['127.0.0.1']);
  const delivery = new RelayDelivery(`smtp://127.0.0.1:${port}`);
  t.teardown(() => delivery.close());
  const outcomes = await delivery.deliver({
    mailFrom: RETURN_PATH,
    recipients: ['ann@example.org'],
    raw: Buffer.from('Subject: x\r\n\r\nx\r\n'),
  });
  t.match(outcomes, [{ status: 'deferred', code: null, enhancedCode: '4.4.1' }]);
});

t.test('openDelivery: the relay when SMTP_RELAY_URL is set, direct delivery otherwise', async (t) => {
  const dns = new NodeDns({ servers: ['127.0.0.1:9'] });
  const relay = openDelivery(
    { relayUrl: 'smtp://127.0.0.1:2525', mxPort: 25, mxAllowPrivate: false, heloName: 'mta.test' },
    dns,
  );
  const direct = openDelivery({ relayUrl: undefined, mxPort: 25, mxAllowPrivate: false, heloName: 'mta.test' }, dns);
  t.teardown(() => Promise.all([relay.close(), direct.close()]).then(() => undefined));
  t.ok(relay instanceof RelayDelivery);
  t.ok(direct instanceof DirectDelivery);
  t.throws(() => new RelayDelivery(`http://user:${PASSWORD}@relay.example.com`), {
    message: /SMTP_RELAY_URL must use smtp: or smtps:/,
  });
});
