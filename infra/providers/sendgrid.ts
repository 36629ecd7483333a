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

export const SENDGRID_BASE_URL = 'https://api.sendgrid.com';

/** The suppression lists kept here, and the reason each keeps (blocks are not suppressions at SendGrid either). */
const SUPPRESSIONS: [string, SuppressionReason][] = [
  ['bounces', 'bounce'],
  ['invalid_emails', 'bounce'],
  ['spam_reports', 'complaint'],
  ['unsubscribes', 'manual'],
];
const SUPPRESSION_LIMIT = 500;

/** The scopes an import reads with; a key holding none of them can only send. */
const READ_SCOPES = [
  'suppression.read',
  'marketing.read',
  'templates.read',
  'user.webhooks.event.settings.read',
  'whitelabel.read',
  'api_keys.read',
];

/** SendGrid's event webhook flags that have an equal of ours. */
const EVENTS: Record<string, string> = {
  processed: 'email.sent',
  delivered: 'email.delivered',
  deferred: 'email.delivery_delayed',
  bounce: 'email.bounced',
  spam_report: 'email.complained',
  open: 'email.opened',
  click: 'email.clicked',
  unsubscribe: 'contact.unsubscribed',
};

interface TokenPage<T> {
  result: T[];
  _metadata?: { next?: string; count?: number };
}

/**
 * Twilio SendGrid (https://www.twilio.com/docs/sendgrid/api-reference): `Authorization: Bearer
 * SG.…`; suppressions paged by `limit`/`offset` (bare arrays, a short page is the last);
 * marketing lists and templates by `page_size` and the `_metadata.next` URL (`page_token`);
 * errors `{errors: [{field, message}]}`; 429 with `X-RateLimit-Reset` (epoch seconds). A
 * restricted key's scopes are read from `/v3/scopes`: one with none of the read scopes is
 * send-only. Marketing contacts are only listed whole through an asynchronous export job:
 * not offered yet (docs/decisions/provider-imports.md).
 */
export function sendgridClient(base: string, apiKey: string, http: ProviderHttpOptions): ProviderClient {
  const get = async <T>(pathAndQuery: string): Promise<T> => {
    const relative = new URL(pathAndQuery, 'http://sendgrid.invalid');
    const url = endpoint(base, relative.pathname);
    url.search = relative.search;
    const answer = await getJson(url, { authorization: `Bearer ${apiKey}` }, http);
    const refused = refusal(answer);
    if (refused) throw refused;
    if (answer.status === 429) {
      const reset = Number(answer.headers['x-ratelimit-reset']);
      const wait = Number.isFinite(reset) ? Math.max(0, reset * 1000 - Date.now()) : 1000;
      throw new ProviderError(
        'rate_limited',
        'SendGrid asked to slow down',
        answer.retryAfter ? retryAfterMs(answer.retryAfter) : wait,
      );
    }
    const common = commonError('SendGrid', answer);
    if (common) throw common;
    if (answer.body === null || typeof answer.body !== 'object')
      throw new ProviderError('failed', `SendGrid answered ${relative.pathname} with no JSON`);
    return answer.body as T;
  };
  const tokenPage = async <T>(first: string, cursor: string | null) => {
    const body = await get<TokenPage<T>>(cursor ?? first);
    const next = body._metadata?.next;
    const url = next ? new URL(next) : null;
    return {
      rows: body.result ?? [],
      next: url && (body.result ?? []).length > 0 ? `${url.pathname}${url.search}` : null,
      count: body._metadata?.count,
    };
  };
  const offsetPage = async <T>(path: string, limit: number, cursor: string | null) => {
    const offset = cursor === null ? 0 : Number(cursor);
    const rows = await get<T[]>(`${path}${path.includes('?') ? '&' : '?'}limit=${limit}&offset=${offset}`);
    return { rows, next: rows.length === limit ? String(offset + limit) : null };
  };

  return {
    provider: 'sendgrid',
    offers: ['suppressions', 'audiences', 'templates', 'webhooks', 'domains', 'api-keys'],

    async check() {
      const { scopes } = await get<{ scopes: string[] }>('/v3/scopes');
      if (!scopes.some((s) => READ_SCOPES.includes(s)))
        throw new ProviderError(
          'restricted',
          'SendGrid: the key holds none of the read scopes (a restricted, send-only key)',
        );
    },

    async count(resource) {
      switch (resource) {
        case 'suppressions': {
          let count = 0;
          let more = false;
          for (const [list] of SUPPRESSIONS) {
            const page = await offsetPage(`/v3/suppression/${list}`, SUPPRESSION_LIMIT, null);
            count += page.rows.length;
            more ||= page.next !== null;
          }
          return { count, more };
        }
        case 'audiences': {
          const page = await tokenPage('/v3/marketing/lists?page_size=100', null);
          return {
            count: page.count ?? page.rows.length,
            more: page.next !== null && (page.count ?? 0) > page.rows.length,
          };
        }
        case 'templates': {
          const page = await tokenPage('/v3/templates?generations=dynamic&page_size=100', null);
          return { count: page.count ?? page.rows.length, more: (page.count ?? 0) > page.rows.length };
        }
        case 'webhooks': {
          const body = await get<{ webhooks?: unknown[] }>('/v3/user/webhooks/event/settings/all');
          return { count: body.webhooks?.length ?? 0, more: false };
        }
        case 'domains': {
          const page = await offsetPage('/v3/whitelabel/domains', 100, null);
          return { count: page.rows.length, more: page.next !== null };
        }
        case 'api-keys': {
          const body = await get<{ result: unknown[] }>('/v3/api_keys?limit=100');
          return { count: body.result.length, more: false };
        }
        default:
          return { count: 0, more: false };
      }
    },

    async page(resource, cursor) {
      switch (resource) {
        case 'suppressions': {
          // One list at a time: the cursor names the list's index and the offset within it.
          const at: { k: number; offset: string | null } = cursor ? JSON.parse(cursor) : { k: 0, offset: null };
          const [list, reason] = SUPPRESSIONS[at.k]!;
          const page = await offsetPage<{ email: string; reason?: string; status?: string }>(
            `/v3/suppression/${list}`,
            SUPPRESSION_LIMIT,
            at.offset,
          );
          const next =
            page.next !== null
              ? { k: at.k, offset: page.next }
              : at.k + 1 < SUPPRESSIONS.length
                ? { k: at.k + 1, offset: null }
                : null;
          return {
            items: page.rows.map((r) => ({
              resource: 'suppressions',
              sourceId: r.email.toLowerCase(),
              email: r.email,
              reason,
              detail: `sendgrid: ${list}${r.reason ? ` (${r.reason})` : ''}`,
            })),
            next: next && JSON.stringify(next),
          };
        }
        case 'audiences': {
          const page = await tokenPage<{ id: string; name: string }>('/v3/marketing/lists?page_size=100', cursor);
          return {
            items: page.rows.map((l) => ({ resource: 'audiences', sourceId: l.id, name: l.name, description: null })),
            next: page.next,
          };
        }
        case 'templates': {
          const page = await tokenPage<{ id: string }>('/v3/templates?generations=dynamic&page_size=100', cursor);
          const items = await Promise.all(
            page.rows.map(async (row): Promise<SourceItem> => {
              const t = await get<{
                id: string;
                name: string;
                versions?: { active: number; subject?: string; html_content?: string }[];
              }>(`/v3/templates/${encodeURIComponent(row.id)}`);
              const version = t.versions?.find((v) => v.active === 1) ?? t.versions?.[0];
              // Dynamic templates are handlebars: `{{name}}`, `{{{name}}}`, dotted names; helpers stay as text.
              const converted = convertTemplate(version?.subject ?? '', version?.html_content ?? '');
              return {
                resource: 'templates',
                sourceId: t.id,
                name: t.name,
                subject: converted.subject,
                html: converted.html,
                variables: converted.variables,
                live: version?.active === 1,
                warnings: converted.warnings,
              };
            }),
          );
          return { items, next: page.next };
        }
        case 'webhooks': {
          const body = await get<{
            webhooks?: ({ id: string; url: string; friendly_name?: string } & Record<string, unknown>)[];
          }>('/v3/user/webhooks/event/settings/all');
          return {
            items: (body.webhooks ?? []).map((w) => ({
              resource: 'webhooks',
              sourceId: w.id,
              url: w.url,
              eventTypes: [
                ...new Set(Object.entries(EVENTS).flatMap(([flag, ours]) => (w[flag] === true ? [ours] : []))),
              ],
              description: w.friendly_name || 'Imported from SendGrid',
            })),
            next: null,
          };
        }
        case 'domains': {
          const page = await offsetPage<{ id: number; domain: string; valid?: boolean }>(
            '/v3/whitelabel/domains',
            100,
            cursor,
          );
          return {
            items: page.rows.map((d) => ({
              resource: 'domains',
              sourceId: String(d.id),
              name: d.domain,
              status: d.valid ? 'valid' : 'not valid',
            })),
            next: page.next,
          };
        }
        case 'api-keys': {
          const body = await get<{ result: { api_key_id: string; name: string }[] }>('/v3/api_keys?limit=100');
          return {
            items: body.result.map((k) => ({ resource: 'api-keys', sourceId: k.api_key_id, name: k.name })),
            next: null,
          };
        }
        default:
          return { items: [], next: null };
      }
    },
  };
}

/** 401 `authorization required` is a key SendGrid does not take; 403 `access forbidden` one lacking the scope. */
function refusal(answer: JsonAnswer): ProviderError | null {
  if (answer.status === 401) return new ProviderError('refused', `SendGrid refused the key: ${messageOf(answer.body)}`);
  if (answer.status === 403)
    return new ProviderError('failed', `SendGrid: the key lacks a scope this needs (${messageOf(answer.body)})`);
  return null;
}
