import crypto from 'node:crypto';
import { simpleParser, type AddressObject } from 'mailparser';
import t from 'tap';
import { generateDkimKeyPair } from '../../infra/dkim/keys.ts';
import { composeMessage } from '../../infra/outbound/compose.ts';
import { signMessage } from '../../infra/outbound/dkim.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { binary, DOMAIN, fullMessage, publishDkim, SELECTOR, verifyDkim } from '../support/outbound.ts';

const addresses = (field: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(field) ? field : field ? [field] : []).flatMap((group) => group.value.map((entry) => entry.address));

t.test('the composed message carries every field, bcc left out, CRLF only', async (t) => {
  const message = fullMessage();
  const { raw, recipients } = await composeMessage(message);
  t.same(
    recipients,
    ['ann@example.org', 'bob@example.org', 'carol@example.org', 'hidden@example.org'],
    'to, cc and bcc for the envelope',
  );
  t.notOk(raw.includes('hidden@example.org'), 'bcc appears nowhere in the message');
  t.notOk(/[^\r]\n/.test(raw.toString('latin1')), 'no bare LF');

  const mail = await simpleParser(raw, { keepCidLinks: true });
  t.same(addresses(mail.from), [`news@${DOMAIN}`]);
  t.equal(mail.from?.value[0]?.name, 'Ünïcode News, Inc.');
  t.same(addresses(mail.to), ['ann@example.org', 'bob@example.org']);
  t.same(addresses(mail.cc), ['carol@example.org']);
  t.notOk(mail.bcc);
  t.same(addresses(mail.replyTo), [`support@${DOMAIN}`]);
  t.equal(mail.subject, message.subject);
  t.equal(mail.messageId, message.messageId);
  t.match(
    message.messageId,
    /^<[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}@sender\.example\.com>$/,
    'a Message-ID on the sending domain',
  );
  t.equal(mail.date?.toISOString(), '2026-11-22T10:00:00.000Z');
  t.equal(mail.inReplyTo, '<previous@example.org>');
  t.same(mail.references, ['<first@example.org>', '<previous@example.org>']);
  t.equal(mail.text, message.text);
  t.equal(mail.html, message.html);
  t.equal(mail.headers.get('x-campaign'), 'spring-2026');
  t.equal(mail.headers.get('x-note'), '=?UTF-8?Q?caf=C3=A9?=', 'a non-ASCII custom header as an encoded word');
  t.match(raw.toString('latin1'), /\r\nList-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n/);
  t.match(
    raw.toString('latin1'),
    /\r\nList-Unsubscribe: <https:\/\/sender\.example\.com\/unsubscribe\/tok_123\?l=%C3%BC>, <mailto:unsubscribe\+tok_123@bounces\.sender\.example\.com>\r\n/,
  );
  t.equal(mail.attachments.length, 2);
  const bytes = mail.attachments.find((a) => a.filename === 'bytes.bin');
  const logo = mail.attachments.find((a) => a.filename === 'logo.png');
  t.same(
    [bytes?.filename, bytes?.contentType, bytes?.content.equals(Buffer.from(binary))],
    ['bytes.bin', 'application/octet-stream', true],
    'binary attachment intact',
  );
  t.same(
    [logo?.filename, logo?.contentType, logo?.cid, logo?.related],
    ['logo.png', 'image/png', 'logo@sender', true],
    'inline part beside the html',
  );
});

t.test('a message without html, attachments or list headers is a single text part', async (t) => {
  const { raw } = await composeMessage(
    fullMessage({ html: undefined, attachments: [], listUnsubscribe: undefined, cc: [], bcc: [] }),
  );
  const mail = await simpleParser(raw);
  t.match(mail.headers.get('content-type'), { value: 'text/plain' });
  t.notOk(mail.headers.has('list-unsubscribe'));
  t.notOk(mail.headers.has('list-unsubscribe-post'));
});

t.test('compose refuses what the API must have refused', async (t) => {
  await t.rejects(composeMessage(fullMessage({ headers: { 'DKIM-Signature': 'v=1' } })), {
    name: 'TypeError',
    message: /reserved_header/,
  });
  await t.rejects(composeMessage(fullMessage({ headers: { 'content-type': 'text/html' } })), {
    name: 'TypeError',
    message: /reserved_header/,
  });
  await t.rejects(composeMessage(fullMessage({ headers: { 'X-A': 'x\r\nBcc: someone@example.org' } })), {
    name: 'TypeError',
    message: /invalid_value/,
  });
  await t.rejects(
    composeMessage(fullMessage({ to: [{ address: 'a@example.org>\r\nBcc: b@example.org' }] })),
    TypeError,
  );
  await t.rejects(
    composeMessage(fullMessage({ from: { address: `news@${DOMAIN}`, name: 'x\r\nBcc: b@example.org' } })),
    TypeError,
  );
  await t.rejects(composeMessage(fullMessage({ listUnsubscribe: { url: 'http://sender.example.com/u' } })), {
    message: /https/,
  });
  await t.rejects(composeMessage(fullMessage({ to: [], cc: [], bcc: [] })), { message: /recipient/ });
});

t.test('DKIM: the signed message verifies against the key published on DNS, and fails once changed', async (t) => {
  const dns = await startDnsServer(t);
  const key = await generateDkimKeyPair();
  publishDkim(dns, key);
  const { raw } = await composeMessage(fullMessage());
  const signed = await signMessage(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: key.privateKeyPem });

  const [result] = await verifyDkim(dns, signed);
  t.equal(result?.status.result, 'pass', 'pass');
  t.equal(result?.signingDomain, DOMAIN);
  t.equal(result?.selector, SELECTOR);
  t.equal(result?.status.aligned, DOMAIN, 'aligned with From for DMARC');
  const header = signed.toString('latin1').slice(0, signed.indexOf('\r\n\r\n'));
  const signature = /^DKIM-Signature: ([\s\S]*?)\r\n(?=\S)/.exec(header)?.[1]?.replace(/\r\n\s+/g, ' ') ?? '';
  t.match(signature, /c=relaxed\/relaxed/);
  t.match(signature, /a=rsa-sha256/);
  const signedHeaders =
    /(?:^|;\s*)h=([^;]+)/
      .exec(signature)?.[1]
      ?.split(':')
      .map((h) => h.trim().toLowerCase()) ?? [];
  for (const name of [
    'from',
    'to',
    'cc',
    'reply-to',
    'subject',
    'date',
    'message-id',
    'in-reply-to',
    'references',
    'mime-version',
    'content-type',
    'list-unsubscribe',
    'list-unsubscribe-post',
  ]) {
    t.ok(signedHeaders.includes(name), `${name} is signed`);
  }
  t.notOk(signedHeaders.includes('x-campaign'), 'custom headers are not');

  const bodyAt = signed.indexOf('\r\n\r\n') + 4 + 40;
  const body = Buffer.from(signed);
  body[bodyAt] = body[bodyAt] === 0x41 ? 0x42 : 0x41;
  const [tamperedBody] = await verifyDkim(dns, body);
  t.equal(tamperedBody?.status.result, 'neutral', 'a changed body byte breaks the body hash');
  t.match(tamperedBody?.status.comment, /body hash did not verify/);

  const subject = Buffer.from(signed.toString('latin1').replace('Subject: ', 'Subject: Re: '), 'latin1');
  const [tamperedSubject] = await verifyDkim(dns, subject);
  t.equal(tamperedSubject?.status.result, 'fail', 'a changed signed header breaks the signature');

  const other = await generateDkimKeyPair();
  publishDkim(dns, other);
  const [wrongKey] = await verifyDkim(dns, signed);
  t.equal(wrongKey?.status.result, 'fail', 'another published key does not verify it');
});

t.test(
  'DKIM signing refuses a key receivers would discard, a key that does not parse, and a malformed selector',
  async (t) => {
    const { raw } = await composeMessage(fullMessage());
    const { privateKey } = crypto.generateKeyPairSync('rsa', {
      modulusLength: 512,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'der' },
    });
    await t.rejects(signMessage(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: privateKey }), {
      message: /at least 1024 bits/,
    });
    const key = await generateDkimKeyPair();
    await t.rejects(signMessage(raw, { domain: DOMAIN, selector: 'bad selector;', privateKeyPem: key.privateKeyPem }), {
      message: /not a selector/,
    });
    await t.rejects(signMessage(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: 'not a key' }), {
      message: /does not parse/,
    });
    const ec = crypto.generateKeyPairSync('ec', {
      namedCurve: 'P-256',
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'der' },
    });
    await t.rejects(signMessage(raw, { domain: DOMAIN, selector: SELECTOR, privateKeyPem: ec.privateKey }), {
      message: /RSA key/,
    });
  },
);
