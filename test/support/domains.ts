import type { MailHosts } from '../../domain/domains/records.ts';
import type { SystemOptions } from '../../system.ts';
import { startTestApp, type TestApp } from './app.ts';
import { startDnsServer, type TestDnsServer, type ZoneEntry } from './dns-server.ts';

/** Our hosts as the domain tests configure them. */
export const HOSTS: MailHosts = {
  mx: 'mx.mail.test',
  spfInclude: 'spf.mail.test',
  returnPath: 'bounces.mail.test',
  tracking: 'track.mail.test',
  storage: 'files.mail.test',
};

/** The service with its DNS pointed at a DNS server on loopback (1 s per lookup); the background re-check off unless given. */
export async function startDomainsApp(
  t: { teardown(fn: () => Promise<void> | void): void },
  options: SystemOptions = {},
): Promise<{ h: TestApp; dns: TestDnsServer }> {
  const dns = await startDnsServer(t);
  const h = await startTestApp(t, {
    dns: { servers: [dns.address], timeoutMs: 1000 },
    mailHosts: HOSTS,
    domainChecks: { pollMs: 3_600_000 },
    ...options,
  });
  return { h, dns };
}

export const errorOf = (res: { statusCode: number; json: () => any }) => [
  res.statusCode,
  res.json().error?.code,
  res.json().error?.param,
];

export async function addDomain(h: TestApp, key: string, domain: string) {
  const res = await h.request(key, 'POST', '/domains', { domain });
  if (res.statusCode !== 201) throw new Error(`domain not added: ${res.statusCode} ${res.body}`);
  return res.json();
}

export async function keyWith(h: TestApp, ownerKey: string, body: object): Promise<string> {
  const res = await h.request(ownerKey, 'POST', '/keys', body);
  if (res.statusCode !== 201) throw new Error(`key not created: ${res.body}`);
  return res.json().token;
}

/** Publishes the records a domain's answer asks for, as a DNS host would (long TXT values in chunks). */
export function publish(
  dns: TestDnsServer,
  records: { type: string; name: string; value: string; priority: number | null }[],
) {
  const entries = new Map<string, ZoneEntry>();
  for (const r of records) {
    const entry = entries.get(r.name) ?? {};
    if (r.type === 'MX') entry.MX = [...(entry.MX ?? []), { exchange: r.value, priority: r.priority! }];
    if (r.type === 'CNAME') entry.CNAME = r.value;
    if (r.type === 'TXT') entry.TXT = [...(entry.TXT ?? []), r.value.match(/.{1,255}/g)!];
    entries.set(r.name, entry);
  }
  for (const [name, entry] of entries) dns.set(name, entry);
}

export const statuses = (domain: { records: { purpose: string; status: string | null }[] }) =>
  domain.records.map((r) => `${r.purpose} ${r.status}`);

export const recordOf = (domain: { records: { purpose: string; name: string; value: string }[] }, purpose: string) =>
  domain.records.find((r) => r.purpose === purpose)!;
