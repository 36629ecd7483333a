import { type DKIMSignOptions, dkimSign } from 'mailauth';
import nodemailer from 'nodemailer';
import MailComposer from 'nodemailer/lib/mail-composer';
import type { ArrivingMessage } from '../../commands/threads/handlers.ts';
import type { MessageSummary } from '../../domain/messages/summary.ts';
import { generateDkimKeyPair } from '../../infra/dkim/keys.ts';
import { startInbound, type System } from '../../system.ts';
import type { TestDnsServer } from './dns-server.ts';

/**
 * Another domain's mail, as its MTA would hand it to ours: `outside.test` publishes SPF for
 * loopback, a DKIM key and DMARC p=reject, and signs with mailauth; `spoof.test` publishes
 * SPF -all and DMARC p=reject and signs nothing, so its mail fails DMARC.
 */
export async function outsideDomains(dns: TestDnsServer) {
  const key = await generateDkimKeyPair();
  dns.set('s1._domainkey.outside.test', { TXT: [`v=DKIM1; k=rsa; p=${key.publicKey}`.match(/.{1,255}/g)!] });
  dns.set('outside.test', { TXT: ['v=spf1 ip4:127.0.0.1 -all'], A: ['127.0.0.1'] });
  dns.set('_dmarc.outside.test', { TXT: ['v=DMARC1; p=reject'] });
  dns.set('spoof.test', { TXT: ['v=spf1 -all'], A: ['192.0.2.1'] });
  dns.set('_dmarc.spoof.test', { TXT: ['v=DMARC1; p=reject'] });
  return {
    /** A message signed by outside.test (DKIM, relaxed/relaxed). */
    async signed(options: Record<string, unknown>): Promise<Buffer> {
      const raw = await compose(options);
      const signatureData = [
        {
          signingDomain: 'outside.test',
          selector: 's1',
          privateKey: key.privateKeyPem,
          canonicalization: 'relaxed/relaxed',
        },
      ];
      const { signatures, errors } = await dkimSign(raw, { signatureData } as unknown as DKIMSignOptions);
      if (errors.length) throw new Error(JSON.stringify(errors));
      return Buffer.concat([Buffer.from(signatures), raw]);
    },
    unsigned: compose,
  };
}

let n = 0;
export function compose(options: Record<string, unknown>): Promise<Buffer> {
  return new MailComposer({
    from: 'Olga <olga@outside.test>',
    subject: 'Hello',
    text: 'A message from outside.\r\n',
    messageId: `<m${++n}-${Math.random().toString(36).slice(2)}@outside.test>`,
    ...options,
  })
    .compile()
    .build();
}

/** Our MX on a free loopback port, closed with the test. */
export async function startTestInbound(
  t: { teardown(fn: () => Promise<void> | void): void },
  system: System,
  options: Partial<Parameters<typeof startInbound>[1]> = {},
) {
  const errors: string[] = [];
  const listener = await startInbound(system, {
    port: 0,
    host: '127.0.0.1',
    hostname: 'mx.mail.test',
    maxMessageBytes: 10 * 1024 * 1024,
    onError: (error, context) => errors.push(`${context}: ${String(error)}`),
    ...options,
  });
  t.teardown(() => listener.close());
  return {
    listener,
    errors,
    /** Hands a message over as another server's MTA does (nodemailer, no TLS on loopback). */
    async send(envelope: { from: string; to: string[] }, raw: Buffer) {
      const transport = nodemailer.createTransport({
        host: '127.0.0.1',
        port: listener.port,
        secure: false,
        ignoreTLS: true,
        name: 'mail.outside.test',
      });
      try {
        return await transport.sendMail({ envelope, raw });
      } finally {
        transport.close();
      }
    },
  };
}

/** An arriving message as the handler hands it to `fileMessage`, for tests that file mail directly. */
export function arrivingMessage(headerId: string, summary: Partial<MessageSummary> = {}): ArrivingMessage {
  return {
    mailFrom: 'olga@outside.test',
    rcptTo: ['a@example.com'],
    client: { ip: '192.0.2.10', helo: 'mail.outside.test' },
    raw: { sha256: 'a'.repeat(64), size: 100 },
    summary: {
      messageId: headerId,
      inReplyTo: [],
      references: [],
      date: null,
      subject: 'Hello',
      from: { name: 'Olga', address: 'olga@outside.test' },
      replyTo: [],
      to: [],
      cc: [],
      bcc: [],
      headers: [],
      headersTruncated: false,
      snippet: 'Hello there',
      attachments: [],
      size: 100,
      ...summary,
    },
    authentication: {
      spf: { result: 'pass', domain: 'outside.test' },
      dkim: [],
      dmarc: null,
      dmarcSkipped: null,
      arc: { result: 'none', instance: 0 },
      header: 'mx.mail.test; spf=pass',
    },
    spam: { spam: false, reasons: [], score: null },
    receivedAt: new Date().toISOString(),
  };
}
