import crypto from 'node:crypto';
import { afterPage, startProviderServer, type Answer, type ProviderServer, type SeenRequest } from './server.ts';

/** The keys the loopback Resend knows: one with full access, one with sending access only. */
export const RESEND_KEYS = { full: 're_full_access_0000000000', sendOnly: 're_sending_only_00000000' };

interface Contact {
  id: string;
  email: string;
  first_name: string | null;
  last_name: string | null;
  unsubscribed: boolean;
  created_at: string;
}

export interface ResendData {
  audiences: { id: string; name: string; created_at: string }[];
  contacts: Map<string, Contact[]>;
  templates: { id: string; name: string; status: 'published' | 'draft'; subject: string; html: string }[];
  webhooks: { id: string; endpoint: string; events: string[]; status: string }[];
  domains: { id: string; name: string; status: string; region: string }[];
  apiKeys: { id: string; name: string; created_at: string }[];
  /** Keys deleted at Resend since: answered as unknown. */
  revoked: Set<string>;
}

const uuid = () => crypto.randomUUID();
const now = () => new Date().toISOString();

/**
 * Seed data: `audiences` audiences of `perAudience` contacts each (every `unsubscribedEvery`-th
 * unsubscribed), the first contacts of each audience shared with the next (one person in two
 * lists), a few templates in Resend's `{{{VAR}}}` syntax, webhooks, domains, keys.
 */
export function resendData(options: { audiences: number; perAudience: number; unsubscribedEvery: number }): ResendData {
  const audiences = Array.from({ length: options.audiences }, (_, i) => ({
    id: uuid(),
    name: `Resend list ${i}`,
    created_at: now(),
  }));
  const contacts = new Map<string, Contact[]>();
  audiences.forEach((a, i) => {
    contacts.set(
      a.id,
      Array.from({ length: options.perAudience }, (_, j) => {
        // The first five of each audience are also the last five of the one before.
        const n = j < 5 && i > 0 ? i * options.perAudience - 5 + j : i * options.perAudience + j;
        return {
          id: uuid(),
          email: `Person${n}@Example.test`,
          first_name: `First${n}`,
          last_name: `Last${n}`,
          unsubscribed: n % options.unsubscribedEvery === options.unsubscribedEvery - 1,
          created_at: now(),
        };
      }),
    );
  });
  return {
    audiences,
    contacts,
    templates: [
      {
        id: uuid(),
        name: 'Welcome',
        status: 'published',
        subject: 'Welcome, {{{FIRST_NAME}}}',
        html: '<p>Hi {{{FIRST_NAME|friend}}}, your plan is {{{ PLAN }}}.</p>',
      },
      { id: uuid(), name: 'Draft letter', status: 'draft', subject: 'Soon', html: '<p>{{{TOPIC}}}</p>' },
    ],
    webhooks: [
      {
        id: uuid(),
        endpoint: 'https://hooks.example.net/resend',
        events: ['email.delivered', 'email.bounced', 'email.failed'],
        status: 'enabled',
      },
      { id: uuid(), endpoint: 'http://127.0.0.1/internal', events: ['email.sent'], status: 'enabled' },
    ],
    domains: [
      { id: uuid(), name: 'mail.example.net', status: 'verified', region: 'us-east-1' },
      { id: uuid(), name: 'news.example.net', status: 'not_started', region: 'eu-west-1' },
    ],
    apiKeys: [
      { id: uuid(), name: 'Production', created_at: now() },
      { id: uuid(), name: 'Staging', created_at: now() },
    ],
    revoked: new Set(),
  };
}

const error = (status: number, name: string, message: string): Answer => ({
  status,
  body: { statusCode: status, name, message },
});

/**
 * Resend's API on loopback, as https://resend.com/docs/api-reference describes it for the
 * endpoints an import reads: `Authorization: Bearer`, `{object: 'list', has_more, data}` pages by
 * `limit` (1 to 100) and `after`, errors as `{statusCode, name, message}`, 429
 * `rate_limit_exceeded` with `Retry-After`.
 */
export function startResendServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  data: ResendData,
): Promise<ProviderServer> {
  const route = (req: SeenRequest): Answer => {
    const auth = req.headers.authorization;
    if (!auth) return error(401, 'missing_api_key', 'Missing API key in the authorization header.');
    const key = auth.replace(/^Bearer /, '');
    if (key === RESEND_KEYS.sendOnly)
      return error(401, 'restricted_api_key', 'This API key is restricted to only send emails');
    if (key !== RESEND_KEYS.full || data.revoked.has(key)) return error(403, 'invalid_api_key', 'API key is invalid');
    const limit = Number(req.query.get('limit') ?? 20);
    if (req.query.has('limit') && (!Number.isInteger(limit) || limit < 1 || limit > 100))
      return error(422, 'validation_error', 'The `limit` parameter must be an integer between 1 and 100.');
    const list = <T extends { id: string }>(rows: T[]): Answer => {
      const paged = afterPage(rows, req.query);
      if (!paged) return error(422, 'validation_error', 'The `after` cursor names no object.');
      return { status: 200, body: { object: 'list', has_more: paged.hasMore, data: paged.page } };
    };
    const parts = req.path.split('/').filter(Boolean);
    if (req.method !== 'GET') return error(405, 'method_not_allowed', 'Method not allowed');
    if (parts[0] === 'audiences' && parts.length === 1) return list(data.audiences);
    if (parts[0] === 'audiences' && parts[2] === 'contacts' && parts.length === 3) {
      const contacts = data.contacts.get(parts[1]!);
      return contacts ? list(contacts) : error(404, 'not_found', 'Audience not found');
    }
    if (parts[0] === 'templates' && parts.length === 1)
      return list(data.templates.map(({ id, name, status }) => ({ id, name, status, created_at: now() })));
    if (parts[0] === 'templates' && parts.length === 2) {
      const tpl = data.templates.find((x) => x.id === parts[1]);
      return tpl
        ? { status: 200, body: { object: 'template', ...tpl } }
        : error(404, 'not_found', 'Template not found');
    }
    if (parts[0] === 'webhooks' && parts.length === 1) return list(data.webhooks);
    if (parts[0] === 'domains' && parts.length === 1) return list(data.domains);
    if (parts[0] === 'api-keys' && parts.length === 1) return list(data.apiKeys);
    return error(404, 'not_found', 'The requested endpoint does not exist.');
  };
  return startProviderServer(t, route, (seconds) => ({
    ...error(429, 'rate_limit_exceeded', 'Too many requests. You can only make 2 requests per second.'),
    headers: { 'retry-after': String(seconds), 'ratelimit-limit': '2', 'ratelimit-remaining': '0' },
  }));
}
