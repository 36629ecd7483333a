import type { ImportResource } from '../../domain/provider-imports/providers.ts';
import { commonError, endpoint, getJson, messageOf, type JsonAnswer, type ProviderHttpOptions } from './http.ts';
import { convertTemplate } from './placeholders.ts';
import { ProviderError, type ProviderClient, type SourceItem, type SourcePage } from './port.ts';

export const RESEND_BASE_URL = 'https://api.resend.com';

/** Resend's page size maximum. */
const LIMIT = 100;

/** Resend's webhook events that have an equal of ours. */
const EVENTS: Record<string, string> = {
  'email.sent': 'email.sent',
  'email.delivered': 'email.delivered',
  'email.delivery_delayed': 'email.delivery_delayed',
  'email.bounced': 'email.bounced',
  'email.complained': 'email.complained',
  'email.opened': 'email.opened',
  'email.clicked': 'email.clicked',
  'email.received': 'email.received',
  'contact.created': 'contact.created',
  'contact.updated': 'contact.updated',
  'contact.deleted': 'contact.deleted',
  'domain.deleted': 'domain.deleted',
};

interface List<T> {
  object: 'list';
  has_more?: boolean;
  data: T[];
}

interface Contact {
  id: string;
  email: string;
  first_name?: string | null;
  last_name?: string | null;
  unsubscribed?: boolean;
}

/**
 * Resend (https://resend.com/docs/api-reference): `Authorization: Bearer re_…`; lists are
 * `{object: 'list', has_more, data}` paged by `limit` (1 to 100) and `after` (the last id). A
 * sending-access key answers 401 `restricted_api_key`, an unknown key 403 `invalid_api_key`
 * (401 `missing_api_key` without one). Contacts live in audiences
 * (`/audiences/{id}/contacts`). Resend has no suppression API.
 */
export function resendClient(base: string, apiKey: string, http: ProviderHttpOptions): ProviderClient {
  const get = async <T>(path: string, query: Record<string, string | number | null> = {}): Promise<T> => {
    const answer = await getJson(endpoint(base, path, query), { authorization: `Bearer ${apiKey}` }, http);
    const refused = refusal(answer);
    if (refused) throw refused;
    const common = commonError('Resend', answer);
    if (common) throw common;
    const body = answer.body as T;
    if (!body || typeof body !== 'object')
      throw new ProviderError('failed', `Resend answered ${path} with no JSON object`);
    return body;
  };
  const list = <T>(path: string, after: string | null, limit = LIMIT) => get<List<T>>(path, { limit, after });
  const paged = async <T extends { id: string }>(
    path: string,
    cursor: string | null,
    map: (row: T) => SourceItem | Promise<SourceItem>,
  ): Promise<SourcePage> => {
    const page = await list<T>(path, cursor);
    const rows = page.data ?? [];
    const items = await Promise.all(rows.map(map));
    return { items, next: page.has_more && rows.length > 0 ? rows[rows.length - 1]!.id : null };
  };
  const PATHS: Partial<Record<ImportResource, string>> = {
    audiences: '/audiences',
    templates: '/templates',
    webhooks: '/webhooks',
    domains: '/domains',
    'api-keys': '/api-keys',
  };

  return {
    provider: 'resend',
    offers: ['audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'],

    async check() {
      await list('/domains', null, 1);
    },

    async count(resource) {
      if (resource === 'contacts') {
        // Contacts are per audience: the first page of each of the first audiences.
        const audiences = await list<{ id: string }>('/audiences', null, 10);
        let count = 0;
        let more = Boolean(audiences.has_more);
        for (const a of audiences.data) {
          const page = await list<Contact>(`/audiences/${encodeURIComponent(a.id)}/contacts`, null);
          count += page.data.length;
          more ||= Boolean(page.has_more);
        }
        return { count, more };
      }
      const path = PATHS[resource];
      if (!path) return { count: 0, more: false };
      const page = await list(path, null);
      return { count: page.data.length, more: Boolean(page.has_more) };
    },

    async page(resource, cursor) {
      switch (resource) {
        case 'audiences':
          return paged<{ id: string; name: string }>('/audiences', cursor, (a) => ({
            resource: 'audiences',
            sourceId: a.id,
            name: a.name,
            description: null,
          }));
        case 'contacts':
          return contactsPage(cursor);
        case 'templates':
          return paged<{ id: string }>('/templates', cursor, async (row) => {
            const t = await get<{
              id: string;
              name: string;
              subject?: string | null;
              html?: string | null;
              status?: string;
            }>(`/templates/${encodeURIComponent(row.id)}`);
            // Resend's variables are `{{{NAME}}}`, with an optional `|fallback`.
            const converted = convertTemplate(t.subject ?? '', t.html ?? '');
            return {
              resource: 'templates',
              sourceId: t.id,
              name: t.name,
              subject: converted.subject,
              html: converted.html,
              variables: converted.variables,
              live: t.status === 'published',
              warnings: converted.warnings,
            };
          });
        case 'webhooks':
          return paged<{ id: string; endpoint: string; events?: string[] }>('/webhooks', cursor, (w) => ({
            resource: 'webhooks',
            sourceId: w.id,
            url: w.endpoint,
            eventTypes: (w.events ?? []).flatMap((e) => (EVENTS[e] ? [EVENTS[e]] : [])),
            description: 'Imported from Resend',
          }));
        case 'domains':
          return paged<{ id: string; name: string; status?: string }>('/domains', cursor, (d) => ({
            resource: 'domains',
            sourceId: d.id,
            name: d.name,
            status: d.status ?? 'unknown',
          }));
        case 'api-keys':
          return paged<{ id: string; name: string }>('/api-keys', cursor, (k) => ({
            resource: 'api-keys',
            sourceId: k.id,
            name: k.name,
          }));
        default:
          return { items: [], next: null };
      }
    },
  };

  /**
   * Contacts, audience by audience: the cursor names the audience under way and the last contact
   * read in it, or (between audiences) the last audience done.
   */
  async function contactsPage(cursor: string | null): Promise<SourcePage> {
    const at = cursor
      ? (JSON.parse(cursor) as { audience: string | null; done: string | null; after: string | null })
      : { audience: null, done: null, after: null };
    let audience = at.audience;
    if (audience === null) {
      const next = await list<{ id: string }>('/audiences', at.done, 1);
      if (next.data.length === 0) return { items: [], next: null };
      audience = next.data[0]!.id;
    }
    const page = await list<Contact>(`/audiences/${encodeURIComponent(audience)}/contacts`, at.after);
    const items: SourceItem[] = page.data.map((c) => ({
      resource: 'contacts',
      sourceId: c.email.toLowerCase(),
      email: c.email,
      name: [c.first_name, c.last_name].filter((p) => p && p.trim() !== '').join(' ') || null,
      attributes: {},
      subscribed: c.unsubscribed !== true,
      audienceSourceIds: [audience],
    }));
    const last = page.data[page.data.length - 1];
    const next =
      page.has_more && last
        ? { audience, done: at.done, after: last.id }
        : { audience: null, done: audience, after: null };
    return { items, next: JSON.stringify(next) };
  }
}

/** Resend's key refusals: `restricted_api_key` is a sending-access key; 401/403 otherwise a key it does not take. */
function refusal(answer: JsonAnswer): ProviderError | null {
  if (answer.status !== 401 && answer.status !== 403) return null;
  const name = (answer.body as { name?: unknown } | null)?.name;
  if (name === 'restricted_api_key')
    return new ProviderError('restricted', `Resend: ${messageOf(answer.body)} (a sending-access key)`);
  return new ProviderError('refused', `Resend refused the key: ${messageOf(answer.body)}`);
}
