import type { SuppressionReason } from '../../domain/suppressions/events.ts';
import { commonError, endpoint, getJson, messageOf, type JsonAnswer, type ProviderHttpOptions } from './http.ts';
import { convertTemplate } from './placeholders.ts';
import { ProviderError, type ProviderClient, type SourceItem, type SourcePage } from './port.ts';

export const MAILGUN_BASE_URL = 'https://api.mailgun.net';

const LIMIT = 100;
/** The suppression lists of a domain, and the reason each keeps here. */
const SUPPRESSIONS: [string, SuppressionReason][] = [
  ['bounces', 'bounce'],
  ['complaints', 'complaint'],
  ['unsubscribes', 'manual'],
];

/** Mailgun's webhook kinds that have an equal of ours. */
const EVENTS: Record<string, string> = {
  delivered: 'email.delivered',
  opened: 'email.opened',
  clicked: 'email.clicked',
  complained: 'email.complained',
  permanent_fail: 'email.bounced',
  temporary_fail: 'email.delivery_delayed',
  unsubscribed: 'contact.unsubscribed',
};

interface Paged<T> {
  items: T[];
  paging?: { next?: string };
}

/** Where a walk over the account's domains stands: the domain's index and name, which of its lists, that list's next page. */
interface DomainCursor {
  i: number;
  name: string | null;
  k: number;
  next: string | null;
}

/**
 * Mailgun (https://documentation.mailgun.com): HTTP Basic `api:<key>`; the US host by default,
 * the EU one (`https://api.eu.mailgun.net`) by configuration. Domains are paged by `limit` and
 * `skip` (`total_count`); suppressions, templates, lists and members by the `paging.next` URL
 * the answer carries (`page=next&address=…`, `p=…`), ending with an empty page. Suppressions,
 * templates and webhooks belong to a domain: each is walked domain by domain. A refusal is 401
 * `Forbidden` (a domain sending key answers the same: it can only send, which Mailgun does not
 * tell apart from a wrong key).
 */
export function mailgunClient(base: string, apiKey: string, http: ProviderHttpOptions): ProviderClient {
  const authorization = `Basic ${Buffer.from(`api:${apiKey}`).toString('base64')}`;
  /** `path` with its query (`?limit=…`, or the query of a `paging.next` URL), on our base. */
  const get = async <T>(pathAndQuery: string): Promise<T> => {
    const relative = new URL(pathAndQuery, 'http://mailgun.invalid');
    const url = endpoint(base, relative.pathname);
    url.search = relative.search;
    const answer = await getJson(url, { authorization }, http);
    const refused = refusal(answer);
    if (refused) throw refused;
    const common = commonError('Mailgun', answer);
    if (common) throw common;
    if (!answer.body || typeof answer.body !== 'object')
      throw new ProviderError('failed', `Mailgun answered ${relative.pathname} with no JSON object`);
    return answer.body as T;
  };
  /** One page by `paging.next`: its rows, and the next page's path while rows come. */
  const paged = async <T>(first: string, next: string | null): Promise<{ rows: T[]; next: string | null }> => {
    const body = await get<Paged<T>>(next ?? first);
    const rows = body.items ?? [];
    const following = body.paging?.next;
    if (rows.length === 0 || !following) return { rows, next: null };
    const url = new URL(following);
    return { rows, next: `${url.pathname}${url.search}` };
  };
  const domainAt = async (i: number): Promise<string | null> =>
    (await get<{ items: { name: string }[] }>(`/v4/domains?limit=1&skip=${i}`)).items[0]?.name ?? null;

  /** A page of a walk over every domain's lists (`kinds`), one list page at a time. */
  async function perDomain(
    cursor: string | null,
    kinds: number,
    page: (domain: string, k: number, next: string | null) => Promise<{ items: SourceItem[]; next: string | null }>,
  ): Promise<SourcePage> {
    const at: DomainCursor = cursor ? JSON.parse(cursor) : { i: 0, name: null, k: 0, next: null };
    const name = at.name ?? (await domainAt(at.i));
    if (name === null) return { items: [], next: null };
    const got = await page(name, at.k, at.next);
    const after: DomainCursor = got.next
      ? { ...at, name, next: got.next }
      : at.k + 1 < kinds
        ? { ...at, name, k: at.k + 1, next: null }
        : { i: at.i + 1, name: null, k: 0, next: null };
    return { items: got.items, next: JSON.stringify(after) };
  }

  const domain = (name: string) => encodeURIComponent(name);

  return {
    provider: 'mailgun',
    offers: ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'],

    async check() {
      await get('/v4/domains?limit=1');
    },

    async count(resource) {
      const firstDomains = async () =>
        (await get<{ items: { name: string }[]; total_count: number }>(`/v4/domains?limit=${LIMIT}`)).items;
      switch (resource) {
        case 'domains': {
          const body = await get<{ items: unknown[]; total_count: number }>(`/v4/domains?limit=${LIMIT}`);
          return { count: body.total_count, more: body.total_count > body.items.length };
        }
        case 'api-keys': {
          const body = await get<{ items: unknown[]; total_count?: number }>('/v1/keys');
          return { count: body.total_count ?? body.items.length, more: false };
        }
        case 'audiences': {
          const page = await paged(`/v3/lists/pages?limit=${LIMIT}`, null);
          return { count: page.rows.length, more: page.rows.length >= LIMIT };
        }
        case 'contacts': {
          const lists = await paged<{ members_count?: number }>(`/v3/lists/pages?limit=${LIMIT}`, null);
          return {
            count: lists.rows.reduce((n, l) => n + (l.members_count ?? 0), 0),
            more: lists.rows.length >= LIMIT,
          };
        }
        case 'suppressions':
        case 'templates':
        case 'webhooks': {
          // A first page of each of the first domains.
          const domains = await firstDomains();
          let count = 0;
          let more = domains.length >= LIMIT;
          for (const d of domains.slice(0, 5)) {
            if (resource === 'webhooks') {
              count += webhookItems(d.name, await get(`/v3/domains/${domain(d.name)}/webhooks`)).length;
              continue;
            }
            const lists = resource === 'templates' ? ['templates'] : SUPPRESSIONS.map(([k]) => k);
            for (const list of lists) {
              const page = await paged(`/v3/${domain(d.name)}/${list}?limit=${LIMIT}`, null);
              count += page.rows.length;
              more ||= page.rows.length >= LIMIT;
            }
          }
          return { count, more: more || domains.length > 5 };
        }
        default:
          return { count: 0, more: false };
      }
    },

    async page(resource, cursor) {
      switch (resource) {
        case 'suppressions':
          return perDomain(cursor, SUPPRESSIONS.length, async (name, k, next) => {
            const [list, reason] = SUPPRESSIONS[k]!;
            const page = await paged<{ address: string; code?: string; error?: string; tags?: string[] }>(
              `/v3/${domain(name)}/${list}?limit=${LIMIT}`,
              next,
            );
            return {
              items: page.rows.map((r) => ({
                resource: 'suppressions',
                sourceId: r.address.toLowerCase(),
                email: r.address,
                reason,
                detail: `mailgun: ${list} of ${name}${r.code ? ` (${r.code}${r.error ? ` ${r.error}` : ''})` : ''}`,
              })),
              next: page.next,
            };
          });
        case 'templates':
          return perDomain(cursor, 1, async (name, _k, next) => {
            const page = await paged<{ name: string }>(`/v3/${domain(name)}/templates?limit=${LIMIT}`, next);
            const items = await Promise.all(
              page.rows.map(async (row): Promise<SourceItem> => {
                const { template } = await get<{
                  template: {
                    name: string;
                    version?: { template?: string; active?: boolean; headers?: Record<string, string> };
                  };
                }>(`/v3/${domain(name)}/templates/${encodeURIComponent(row.name)}?active=yes`);
                // Handlebars: `{{name}}`, `{{{name}}}`; helpers stay as text.
                const converted = convertTemplate(
                  template.version?.headers?.Subject ?? '',
                  template.version?.template ?? '',
                );
                return {
                  resource: 'templates',
                  sourceId: `${name}/${template.name}`,
                  name: template.name,
                  subject: converted.subject,
                  html: converted.html,
                  variables: converted.variables,
                  live: template.version?.active === true,
                  warnings: converted.warnings,
                };
              }),
            );
            return { items, next: page.next };
          });
        case 'webhooks':
          return perDomain(cursor, 1, async (name) => ({
            items: webhookItems(name, await get(`/v3/domains/${domain(name)}/webhooks`)),
            next: null,
          }));
        case 'audiences': {
          const page = await paged<{ address: string; name?: string; description?: string }>(
            `/v3/lists/pages?limit=${LIMIT}`,
            cursor,
          );
          return {
            items: page.rows.map((l) => ({
              resource: 'audiences',
              sourceId: l.address,
              name: l.name || l.address,
              description: l.description || null,
            })),
            next: page.next,
          };
        }
        case 'contacts':
          return membersPage(cursor);
        case 'domains': {
          const skip = cursor === null ? 0 : Number(cursor);
          const body = await get<{ items: { name: string; state?: string }[]; total_count: number }>(
            `/v4/domains?limit=${LIMIT}&skip=${skip}`,
          );
          const next = skip + body.items.length;
          return {
            items: body.items.map((d) => ({
              resource: 'domains',
              sourceId: d.name,
              name: d.name,
              status: d.state ?? 'unknown',
            })),
            next: body.items.length > 0 && next < body.total_count ? String(next) : null,
          };
        }
        case 'api-keys': {
          const body = await get<{ items: { id: string; description?: string; role?: string; kind?: string }[] }>(
            '/v1/keys',
          );
          return {
            items: body.items.map((k) => ({
              resource: 'api-keys',
              sourceId: k.id,
              name: [k.description || k.id, k.role ?? k.kind].filter(Boolean).join(' — '),
            })),
            next: null,
          };
        }
        default:
          return { items: [], next: null };
      }
    },
  };

  /**
   * Members, list by list: the cursor names the list under way and its next page, or (between
   * lists) the last list done, from which Mailgun's list paging (`page=next&address=`) goes on.
   */
  async function membersPage(cursor: string | null): Promise<SourcePage> {
    const at: { list: string | null; done: string | null; next: string | null } = cursor
      ? JSON.parse(cursor)
      : { list: null, done: null, next: null };
    let list = at.list;
    if (list === null) {
      const query = at.done === null ? '' : `&page=next&address=${encodeURIComponent(at.done)}`;
      const lists = await get<Paged<{ address: string }>>(`/v3/lists/pages?limit=1${query}`);
      if (lists.items.length === 0) return { items: [], next: null };
      list = lists.items[0]!.address;
    }
    const page = await paged<{ address: string; name?: string; subscribed?: boolean; vars?: Record<string, unknown> }>(
      `/v3/lists/${encodeURIComponent(list)}/members/pages?limit=${LIMIT}`,
      at.next,
    );
    const items: SourceItem[] = page.rows.map((m) => ({
      resource: 'contacts',
      sourceId: m.address.toLowerCase(),
      email: m.address,
      name: m.name?.trim() || null,
      attributes: Object.fromEntries(
        Object.entries(m.vars ?? {}).flatMap(([k, v]) =>
          typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' ? [[k, String(v)]] : [],
        ),
      ),
      subscribed: m.subscribed !== false,
      audienceSourceIds: [list],
    }));
    const next = page.next ? { list, done: at.done, next: page.next } : { list: null, done: list, next: null };
    return { items, next: JSON.stringify(next) };
  }
}

/** A domain's webhooks (`{webhooks: {<kind>: {urls}}}`) as one endpoint per URL with the kinds it hears. */
function webhookItems(domain: string, body: unknown): SourceItem[] {
  const hooks = ((body as { webhooks?: Record<string, { urls?: string[] }> }).webhooks ?? {}) as Record<
    string,
    { urls?: string[] }
  >;
  const byUrl = new Map<string, Set<string>>();
  for (const [kind, { urls = [] }] of Object.entries(hooks))
    for (const url of urls) {
      const events = byUrl.get(url) ?? new Set<string>();
      if (EVENTS[kind]) events.add(EVENTS[kind]);
      byUrl.set(url, events);
    }
  return [...byUrl.entries()].map(([url, events]) => ({
    resource: 'webhooks',
    sourceId: `${domain} ${url}`,
    url,
    eventTypes: [...events],
    description: `Imported from Mailgun (${domain})`,
  }));
}

/** Mailgun's 401 (`Forbidden`, as text) or 403: a key it does not take for reading. */
function refusal(answer: JsonAnswer): ProviderError | null {
  if (answer.status !== 401 && answer.status !== 403) return null;
  return new ProviderError('refused', `Mailgun refused the key: ${messageOf(answer.body)}`);
}
