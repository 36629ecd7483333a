import { promises as dnsPromises } from 'node:dns';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { dkimName } from '../../domain/domains/records.ts';
import type { DkimKeyPair } from '../../infra/dkim/keys.ts';
import { newMessageId, type OutgoingMessage } from '../../infra/outbound/compose.ts';
import type { TestDnsServer } from './dns-server.ts';

export const DOMAIN = 'sender.example.com';
export const SELECTOR = 'wms202611';
export const binary = Uint8Array.from({ length: 256 }, (_, i) => i);

export function fullMessage(overrides: Partial<OutgoingMessage> = {}): OutgoingMessage {
  return {
    messageId: newMessageId(DOMAIN),
    date: new Date('2026-11-22T10:00:00.000Z'),
    from: { address: `news@${DOMAIN}`, name: 'Ünïcode News, Inc.' },
    to: [{ address: 'ann@example.org', name: 'Ann' }, { address: 'bob@example.org' }],
    cc: [{ address: 'carol@example.org' }],
    bcc: [{ address: 'hidden@example.org' }],
    replyTo: [{ address: `support@${DOMAIN}` }],
    subject: 'Spring sale — 20 % off für alle',
    text: 'Hello,\nthe sale starts now.\n',
    html: '<p>Hello, <b>the sale</b> starts now. <img src="cid:logo@sender"></p>',
    attachments: [
      { filename: 'bytes.bin', content: binary, contentType: 'application/octet-stream' },
      {
        filename: 'logo.png',
        content: Buffer.from('not really a png'),
        contentType: 'image/png',
        contentId: 'logo@sender',
      },
    ],
    headers: { 'X-Campaign': 'spring-2026', 'X-Note': 'café' },
    inReplyTo: '<previous@example.org>',
    references: ['<first@example.org>', '<previous@example.org>'],
    listUnsubscribe: {
      url: 'https://sender.example.com/unsubscribe/tok_123?l=ü',
      mailto: `unsubscribe+tok_123@bounces.${DOMAIN}`,
    },
    ...overrides,
  };
}

/** Publishes `key` at the selector's name, split into 255-octet strings as DNS needs. */
export function publishDkim(dns: TestDnsServer, key: DkimKeyPair, domain = DOMAIN, selector = SELECTOR): void {
  const value = `v=DKIM1; k=rsa; p=${key.publicKey}`;
  dns.set(dkimName(selector, domain), { TXT: [value.match(/.{1,255}/g)!] });
}

/** mailauth's verifier asking the loopback DNS server, as a receiver asks the public DNS. */
export async function verifyDkim(dns: TestDnsServer, raw: Buffer) {
  const resolver = new dnsPromises.Resolver();
  resolver.setServers([dns.address]);
  const result = await dkimVerify(raw, {
    resolver: (name: string, type: string) => resolver.resolve(name, type as 'TXT') as Promise<string[][]>,
  });
  return result.results;
}
