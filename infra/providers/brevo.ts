import type { SuppressionReason } from '../../domain/suppressions/events.ts';
import {
  commonError,
  endpoint,
  getJson,
  messageOf,
  retryAfterMs,
  type JsonAnswer,
  type ProviderHttpOptions,
} from './http.ts';
import { convertTemplate } from './placeholders.ts';
import { ProviderError, type ProviderClient, type SourceItem } from './port.ts';

export const BREVO_BASE_URL = 'https://api.brevo.com/v3';

/** Page sizes within Brevo's maxima (contacts 1,000, lists 50, blocked contacts 100, templates 1,000). */
const LIMITS = { contacts: 1000, lists: 50, blocked: 100, templates: 100, domains: 100 };

const REASONS: Record<string, SuppressionReason> = {
  hardBounce: 'bounce',
  contactFlaggedAsSpam: 'complaint',
};

/** Brevo's transactional webhook events that have an equal of ours. */
const EVENTS: Record<string, string> = {
  request: 'email.sent',
  delivered: 'email.delivered',
  deferred: 'email.delivery_delayed',
  hardBounce: 'email.bounced',
  softBounce: 'email.bounced',
  spam: 'email.complained',
  opened: 'email.opened',
  uniqueOpened: 'email.opened',
  click: 'email.clicked',
  unsubscribed: 'contact.unsubscribed',
};

interface Contact {
  id: number;
  email?: string;
  emailBlacklisted?: boolean;
  listIds?: number[];
  attributes?: Record<string, unknown>;
}

/**
 * Brevo (https://developers.brevo.com): `api-key` header; lists paged by `limit` and `offset`
 * with a `count`; refusals as `{code, message}` (401 `unauthorized`, "Key not found"); 429 with
 * `x-sib-ratelimit-reset` (seconds). An SMTP key (`xsmtpsib-`) only relays mail: refused as
 * send-only. Contacts carry `listIds` and `emailBlacklisted` (unsubscribed); names are the
 * FIRSTNAME and LASTNAME attributes. Brevo lists no API keys.
 */
export function brevoClient(base: string, apiKey: string, http: ProviderHttpOptions): ProviderClient {
  const get = async <T>(path: string, query: Record<string, string | number | null> = {}): Promise<T> => {
    if (apiKey.startsWith('xsmtpsib-'))
      throw new ProviderError(
        'restricted',
        'Brevo: an SMTP key can only relay mail (an API key, xkeysib-, reads the account)',
      );
    const answer = await getJson(endpoint(base, path, query), { 'api-key': apiKey }, http);
    const refused = refusal(answer);
    if (refused) throw refused;
    if (answer.status === 429) {
      const reset = answer.headers['x-sib-ratelimit-reset'];
      const wait = answer.retryAfter ?? (typeof reset === 'string' ? reset : null);
      throw new ProviderError('rate_limited', 'Brevo asked to slow down', retryAfterMs(wait));
    }
    const common = commonError('Brevo', answer);
    if (common) throw common;
    if (!answer.body || typeof answer.body !== 'object')
      throw new ProviderError('failed', `Brevo answered ${path} with no JSON object`);
    return answer.body as T;
  };
  /** One offset page: its rows, and the offset of the next when `count` says more follow. */
  const offsetPage = async <T>(
    path: string,
    key: string,
    limit: number,
    cursor: string | null,
    extra: Record<string, string> = {},
  ): Promise<{ rows: T[]; next: string | null; count: number }> => {
    const offset = cursor === null ? 0 : Number(cursor);
    const body = await get<Record<string, unknown>>(path, { limit, offset, ...extra });
    const rows = (body[key] as T[] | undefined) ?? [];
    const count = typeof body.count === 'number' ? body.count : rows.length;
    const next = offset + rows.length;
    return { rows, next: rows.length > 0 && next < count ? String(next) : null, count };
  };
  const counted = async (path: string, key: string, limit: number) => {
    const first = await offsetPage(path, key, limit, null);
    return { count: first.count, more: first.next !== null };
  };

  return {
    provider: 'brevo',
    offers: ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains'],

    async check() {
      await get('/account');
    },

    async count(resource) {
      switch (resource) {
        case 'suppressions':
          return counted('/smtp/blockedContacts', 'contacts', LIMITS.blocked);
        case 'audiences':
          return counted('/contacts/lists', 'lists', LIMITS.lists);
        case 'contacts':
          return counted('/contacts', 'contacts', LIMITS.contacts);
        case 'templates':
          return counted('/smtp/templates', 'templates', LIMITS.templates);
        case 'webhooks': {
          const body = await get<{ webhooks?: unknown[] }>('/webhooks', { type: 'transactional' });
          return { count: body.webhooks?.length ?? 0, more: false };
        }
        case 'domains': {
          const body = await get<{ domains?: unknown[] }>('/senders/domains');
          return { count: body.domains?.length ?? 0, more: false };
        }
        default:
          return { count: 0, more: false };
      }
    },

    async page(resource, cursor) {
      switch (resource) {
        case 'suppressions': {
          const page = await offsetPage<{ email: string; reason?: { code?: string; message?: string } }>(
            '/smtp/blockedContacts',
            'contacts',
            LIMITS.blocked,
            cursor,
          );
          return {
            items: page.rows.map((c) => ({
              resource: 'suppressions',
              sourceId: c.email.toLowerCase(),
              email: c.email,
              reason: REASONS[c.reason?.code ?? ''] ?? 'manual',
              detail: `brevo: ${c.reason?.code ?? 'blocked'}${c.reason?.message ? ` (${c.reason.message})` : ''}`,
            })),
            next: page.next,
          };
        }
        case 'audiences': {
          const page = await offsetPage<{ id: number; name: string }>('/contacts/lists', 'lists', LIMITS.lists, cursor);
          return {
            items: page.rows.map((l) => ({
              resource: 'audiences',
              sourceId: String(l.id),
              name: l.name,
              description: null,
            })),
            next: page.next,
          };
        }
        case 'contacts': {
          const page = await offsetPage<Contact>('/contacts', 'contacts', LIMITS.contacts, cursor);
          const items: SourceItem[] = page.rows.flatMap((c) => {
            if (!c.email) return [];
            const attributes = c.attributes ?? {};
            const { FIRSTNAME, LASTNAME, ...rest } = attributes;
            const name = [FIRSTNAME, LASTNAME].filter((p) => typeof p === 'string' && p.trim() !== '').join(' ');
            return [
              {
                resource: 'contacts' as const,
                sourceId: c.email.toLowerCase(),
                email: c.email,
                name: name || null,
                attributes: Object.fromEntries(
                  Object.entries(rest).flatMap(([k, v]) =>
                    typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? [[k, String(v)]] : [],
                  ),
                ),
                subscribed: c.emailBlacklisted !== true,
                audienceSourceIds: (c.listIds ?? []).map(String),
              },
            ];
          });
          return { items, next: page.next };
        }
        case 'templates': {
          const page = await offsetPage<{
            id: number;
            name: string;
            subject?: string;
            htmlContent?: string;
            isActive?: boolean;
          }>('/smtp/templates', 'templates', LIMITS.templates, cursor);
          return {
            items: page.rows.map((t) => {
              // `{{ params.NAME }}` is the send's parameter NAME; `{{ contact.NAME }}` the contact's attribute.
              const converted = convertTemplate(t.subject ?? '', t.htmlContent ?? '', (name) =>
                name.replace(/^params\./, '').replace(/^contact\./, 'contact_'),
              );
              return {
                resource: 'templates',
                sourceId: String(t.id),
                name: t.name,
                subject: converted.subject,
                html: converted.html,
                variables: converted.variables,
                live: t.isActive === true,
                warnings: converted.warnings,
              };
            }),
            next: page.next,
          };
        }
        case 'webhooks': {
          const body = await get<{ webhooks?: { id: number; url: string; description?: string; events?: string[] }[] }>(
            '/webhooks',
            { type: 'transactional' },
          );
          return {
            items: (body.webhooks ?? []).map((w) => ({
              resource: 'webhooks',
              sourceId: String(w.id),
              url: w.url,
              eventTypes: [...new Set((w.events ?? []).flatMap((e) => (EVENTS[e] ? [EVENTS[e]] : [])))],
              description: w.description || 'Imported from Brevo',
            })),
            next: null,
          };
        }
        case 'domains': {
          const body = await get<{
            domains?: { id: number; domain_name: string; authenticated?: boolean; verified?: boolean }[];
          }>('/senders/domains');
          return {
            items: (body.domains ?? []).map((d) => ({
              resource: 'domains',
              sourceId: String(d.id),
              name: d.domain_name,
              status: d.authenticated ? 'authenticated' : d.verified ? 'verified' : 'not authenticated',
            })),
            next: null,
          };
        }
        default:
          return { items: [], next: null };
      }
    },
  };
}

/** Brevo's 401 (`unauthorized`, "Key not found"), or 403 for a key not allowed from this address. */
function refusal(answer: JsonAnswer): ProviderError | null {
  if (answer.status !== 401 && answer.status !== 403) return null;
  return new ProviderError('refused', `Brevo refused the key: ${messageOf(answer.body)}`);
}
