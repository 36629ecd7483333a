import { startProviderServer, type Answer, type ProviderServer, type RateLimit, type SeenRequest } from './server.ts';

export const BREVO_KEYS = { api: 'xkeysib-0000000000000000-aaaaaaaa', smtp: 'xsmtpsib-0000000000000000-bbbbbbbb' };

interface Contact {
  id: number;
  email: string;
  emailBlacklisted: boolean;
  smsBlacklisted: boolean;
  listIds: number[];
  attributes: Record<string, unknown>;
}

export interface BrevoData {
  lists: { id: number; name: string; totalSubscribers: number }[];
  contacts: Contact[];
  blocked: { email: string; senderEmail: string; reason: { code: string; message: string }; blockedAt: string }[];
  templates: { id: number; name: string; subject: string; htmlContent: string; isActive: boolean }[];
  webhooks: { id: number; url: string; description: string; events: string[]; type: string }[];
  domains: { id: number; domain_name: string; authenticated: boolean; verified: boolean }[];
}

/** Seed: `contacts` contacts over three lists (every 7th unsubscribed), blocked addresses, templates, a webhook, domains. */
export function brevoData(contacts: number, blocked: number): BrevoData {
  const codes = ['hardBounce', 'contactFlaggedAsSpam', 'unsubscribedViaEmail', 'adminBlocked'];
  return {
    lists: [
      { id: 2, name: 'Newsletter', totalSubscribers: 0 },
      { id: 3, name: 'Customers', totalSubscribers: 0 },
      { id: 5, name: 'Beta', totalSubscribers: 0 },
    ],
    contacts: Array.from({ length: contacts }, (_, i) => ({
      id: i + 1,
      email: `member${i}@brevo.test`,
      emailBlacklisted: i % 7 === 6,
      smsBlacklisted: false,
      listIds: i % 2 === 0 ? [2] : [2, 3],
      attributes: { FIRSTNAME: `Member${i}`, LASTNAME: 'Brevo', PLAN: i % 3 === 0 ? 'pro' : 'free', SCORE: i },
    })),
    blocked: Array.from({ length: blocked }, (_, i) => ({
      email: `blocked${i}@brevo.test`,
      senderEmail: 'news@example.net',
      reason: { code: codes[i % 4]!, message: 'blocked' },
      blockedAt: new Date().toISOString(),
    })),
    templates: [
      {
        id: 11,
        name: 'Brevo welcome',
        subject: 'Hello {{ contact.FIRSTNAME }}',
        htmlContent: '<p>Your code is {{ params.CODE }} {{ params.CODE | default: "none" }}</p>',
        isActive: true,
      },
    ],
    webhooks: [
      {
        id: 31,
        url: 'https://hooks.example.net/brevo',
        description: 'Delivery events',
        events: ['delivered', 'hardBounce', 'softBounce', 'spam', 'proxyOpen'],
        type: 'transactional',
      },
    ],
    domains: [{ id: 1, domain_name: 'brevo-mail.example.net', authenticated: true, verified: true }],
  };
}

/**
 * Brevo's documented limits on general plans for the endpoints an import pages through
 * (https://developers.brevo.com/docs/api-limits, docs/decisions/provider-imports.md): all of
 * `/v3/contacts/…` 10 requests a second, `/v3/smtp/blockedContacts` 1,000.
 */
export function brevoRateLimit(path: string): RateLimit | null {
  if (path === '/v3/contacts' || path.startsWith('/v3/contacts/')) return { bucket: 'contacts', perSecond: 10 };
  if (path === '/v3/smtp/blockedContacts') return { bucket: 'blockedContacts', perSecond: 1000 };
  return null;
}

/**
 * Brevo's API v3 on loopback (https://developers.brevo.com): `api-key` header, `limit`/`offset`
 * paging with `count`, errors `{code, message}`, 429 with `x-sib-ratelimit-reset`; with `paced`,
 * at its documented rate limits (`brevoRateLimit`).
 */
export function startBrevoServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  data: BrevoData,
  options: { paced?: boolean } = {},
): Promise<ProviderServer> {
  const route = (req: SeenRequest): Answer => {
    if (req.headers['api-key'] !== BREVO_KEYS.api)
      return { status: 401, body: { code: 'unauthorized', message: 'Key not found' } };
    const path = req.path.replace(/^\/v3/, '');
    const limit = Number(req.query.get('limit') ?? 50);
    const offset = Number(req.query.get('offset') ?? 0);
    const page = <T>(rows: T[], key: string, max: number): Answer =>
      limit > max
        ? { status: 400, body: { code: 'out_of_range', message: `limit should be at most ${max}` } }
        : { status: 200, body: { [key]: rows.slice(offset, offset + limit), count: rows.length } };
    if (path === '/account') return { status: 200, body: { email: 'owner@example.net', companyName: 'Example' } };
    if (path === '/contacts') return page(data.contacts, 'contacts', 1000);
    if (path === '/contacts/lists') return page(data.lists, 'lists', 50);
    if (path === '/smtp/blockedContacts') return page(data.blocked, 'contacts', 100);
    if (path === '/smtp/templates') return page(data.templates, 'templates', 1000);
    if (path === '/webhooks') return { status: 200, body: { webhooks: data.webhooks } };
    if (path === '/senders/domains') return { status: 200, body: { domains: data.domains } };
    return { status: 404, body: { code: 'document_not_found', message: 'Not found' } };
  };
  return startProviderServer(
    t,
    route,
    (seconds, perSecond = 10) => ({
      status: 429,
      body: { code: 'too_many_requests', message: 'Too many requests' },
      headers: {
        'x-sib-ratelimit-limit': String(perSecond),
        'x-sib-ratelimit-remaining': '0',
        'x-sib-ratelimit-reset': String(seconds),
      },
    }),
    options.paced ? brevoRateLimit : undefined,
  );
}
