import MailComposer from 'nodemailer/lib/mail-composer';
import { createAddress } from '../commands/addresses/handlers.ts';
import { addDomain } from '../commands/domains/handlers.ts';
import { createRule } from '../commands/rules/handlers.ts';
import { createWorkspace } from '../commands/workspaces/handlers.ts';
import type { Condition } from '../domain/rules/events.ts';
import { generateDkimKeyPair } from '../infra/dkim/keys.ts';
import { signMessage } from '../infra/outbound/dkim.ts';
import type { InboundListener } from '../infra/inbound/listener.ts';
import { startInbound, type System } from '../system.ts';
import type { TestDnsServer } from '../test/support/dns-server.ts';

/** The sending domain of the inbound benchmarks, and its DKIM selector. */
export const SENDER_DOMAIN = 'sender.example.com';
export const SENDER_SELECTOR = 's1';

/** Publishes the sender's DKIM key, SPF (127.0.0.1) and a rejecting DMARC policy; answers the private key. */
export async function publishSender(dnsServer: TestDnsServer): Promise<string> {
  const key = await generateDkimKeyPair();
  dnsServer.set(`${SENDER_SELECTOR}._domainkey.${SENDER_DOMAIN}`, {
    TXT: [`v=DKIM1; k=rsa; p=${key.publicKey}`.match(/.{1,255}/g)!],
  });
  dnsServer.set(SENDER_DOMAIN, { TXT: ['v=spf1 ip4:127.0.0.1 -all'], A: ['127.0.0.1'] });
  dnsServer.set(`_dmarc.${SENDER_DOMAIN}`, { TXT: ['v=DMARC1; p=reject'] });
  return key.privateKeyPem;
}

const paragraph = 'Thanks for the quick reply. Here are the notes from the call, with the open points below. '.repeat(
  8,
);

/**
 * The benchmarks' message number `i` to ann@ours.example.com, DKIM-signed: about 3 KB, a reply
 * (its parent never sent), one in ten with a small attachment. `stamp` keeps Message-IDs apart across runs.
 */
export async function inboundMessage(
  i: number,
  sender: { domain: string; selector: string; privateKeyPem: string },
  stamp: number,
): Promise<Buffer> {
  const raw = await new MailComposer({
    from: `Carol Sender <carol@${sender.domain}>`,
    to: 'Ann <ann@ours.example.com>',
    subject: `Re: Notes from the call #${i}`,
    messageId: `<n${i}-${stamp}@${sender.domain}>`,
    inReplyTo: `<n${i - 1}@${sender.domain}>`,
    date: new Date(),
    text: `${paragraph}\n\nItem ${i}\n`,
    html: `<p>${paragraph}</p><p>Item ${i}</p>`,
    attachments: i % 10 === 0 ? [{ filename: 'notes.txt', content: `notes ${i}\n`.repeat(200) }] : [],
  })
    .compile()
    .build();
  return signMessage(raw, sender);
}

const ruleOf = (name: string, condition: Omit<Condition, 'negate' | 'header'>) => ({
  name,
  description: null,
  enabled: true,
  match: 'all' as const,
  conditions: [{ ...condition, header: null, negate: false }],
  actions: [{ type: 'label' as const, value: 'archive' }],
  stopProcessing: false,
});

/**
 * The mailbox's rules, each evaluated on every message: one matches the tenth with an attachment
 * (its run recorded, the thread archived), two match none.
 */
const BENCH_RULES = [
  ruleOf('Attachments', { field: 'has_attachment', op: 'equals', value: 'true' }),
  ruleOf('Boss', { field: 'envelope_from', op: 'equals', value: 'boss@elsewhere.test' }),
  ruleOf('Huge', { field: 'message_size', op: 'gt', value: '10000000' }),
];

/**
 * The receiving slice as the server starts it (`startInbound`), for ann@ours.example.com of a new
 * workspace with three rules (BENCH_RULES): its domain marked verified in the read model (the
 * RCPT policy reads that flag; DNS verification is not what is measured).
 */
export async function receivingSlice(system: System): Promise<InboundListener<unknown>> {
  const ws = await createWorkspace(system.commands, { name: 'Bench inbound', ownerEmail: 'owner@bench.test' });
  const actor = { workspaceId: ws.workspaceId, kind: 'operator' as const, id: null };
  const now = new Date().toISOString();
  const domainId = await addDomain(system.commands, system.domains, actor, { domain: 'ours.example.com' }, now);
  const address = { address: 'ann@ours.example.com', localPart: 'ann', domain: 'ours.example.com', domainId };
  const { addressId } = await createAddress(system.commands, actor, { ...address, enabled: true }, now);
  await system.database.pool.query('UPDATE domains SET receiving_verified_at = now() WHERE id = $1', [domainId]);
  const mailbox = { address: address.address, addressId, domainId };
  for (const rule of BENCH_RULES) await createRule(system.commands, actor, { mailbox, rule }, now);
  return startInbound(system, {
    port: 0,
    host: '127.0.0.1',
    hostname: 'mx.ours.test',
    maxMessageBytes: 50 * 1024 * 1024,
  });
}
