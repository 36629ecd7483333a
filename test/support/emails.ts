import { simpleParser, type ParsedMail } from 'mailparser';
import type { SystemOptions } from '../../system.ts';
import type { TestApp } from './app.ts';
import { addDomain, HOSTS, keyWith, publish, startDomainsApp } from './domains.ts';
import { sharedFreePort, startMxServer } from './mx-server.ts';

type Workspace = Awaited<ReturnType<TestApp['workspace']>>;

/**
 * The service with a workspace whose `example.com` is verified, with addresses `a@` and `b@`
 * (enabled) and `off@` (disabled); `workspace(ws)` adds the same to another workspace under a
 * domain of its own.
 */
export async function startSendingApp(
  t: { teardown(fn: () => Promise<void> | void): void },
  options: SystemOptions = {},
) {
  // The recipients' side: delivery runs in the background, so every domain these tests mail
  // resolves to one loopback MX that takes everything (a recipient domain without one would
  // bounce, and the bounce would suppress the address for the tests after).
  const port = await sharedFreePort(['127.0.0.1']);
  const mx = await startMxServer(t, '127.0.0.1', port);
  const { h, dns } = await startDomainsApp(t, {
    outbound: { mxPort: port, mxAllowPrivate: true, heloName: 'mta.mail.test' },
    ...options,
  });
  for (const domain of ['example.org', 'example.net', 'elsewhere.test'])
    dns.set(domain, { MX: [{ exchange: 'mx.recipients.test', priority: 10 }] });
  dns.set('mx.recipients.test', { A: ['127.0.0.1'] });
  // The workspaces' own domains point their MX at ours.
  dns.set(HOSTS.mx, { A: ['127.0.0.1'] });
  const setUp = async (domain: string) => {
    const ws = await h.workspace();
    const d = await addDomain(h, ws.apiKey, domain);
    publish(dns, d.records);
    const verify = await h.request(ws.apiKey, 'POST', `/domains/${d.id}/verify`);
    if (!verify.json().receiving?.verified) throw new Error(`not verified: ${verify.statusCode} ${verify.body}`);
    const address = async (local: string, enabled = true) => {
      const res = await h.request(ws.apiKey, 'POST', '/addresses', { address: `${local}@${domain}`, enabled });
      if (res.statusCode !== 201) throw new Error(res.body);
      return res.json();
    };
    return { ws, domain: d, a: await address('a'), b: await address('b'), off: await address('off', false) };
  };
  return { h, dns, mx, setUp, keyWith: (ws: Workspace, body: object) => keyWith(h, ws.apiKey, body) };
}

/** The stored MIME message of a sent email, parsed. */
export async function storedMessage(h: TestApp, emailId: string, workspaceId: string): Promise<ParsedMail> {
  const events = await h.system.store.readStream(`ws-${workspaceId}.email-${emailId}`);
  const raw = await h.system.blobs.get((events[0]!.data as { raw: { sha256: string } }).raw.sha256);
  if (!raw) throw new Error('the message is not in the blob store');
  return simpleParser(raw);
}
