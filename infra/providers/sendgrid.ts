import { createHash } from 'node:crypto';
import type { SuppressionReason } from '../../domain/suppressions/events.ts';
import {
  commonError,
  download,
  endpoint,
  messageOf,
  requestJson,
  retryAfterMs,
  type JsonAnswer,
  type ProviderHttpOptions,
} from './http.ts';
import { convertTemplate } from './placeholders.ts';
import { ProviderError, type ProviderClient, type SourceItem, type SourcePage } from './port.ts';

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
  'asm.groups.suppressions.read',
  'templates.read',
  'user.webhooks.event.settings.read',
  'whitelabel.read',
  'api_keys.read',
];

/** Contacts handed to the import per step, out of an export file read whole. */
const CONTACTS_PAGE = 500;
/** Export files are asked split at this size (MB), and a download is refused past `DOWNLOAD_MAX` bytes, gzipped or not. */
const EXPORT_FILE_MB = 50;
const DOWNLOAD_MAX = 256 * 1024 * 1024;
/** Reserved contact fields kept as attributes besides the custom fields (names and ids are kept otherwise). */
const RESERVED_ATTRIBUTES = [
  'address_line_1',
  'address_line_2',
  'city',
  'state_province_region',
  'postal_code',
  'country',
  'phone_number',
];

/**
 * Where the contacts resource stands: the export jobs to run (each list's, whose rows are its
 * members, then one of all contacts for those in no list), the one under way, and the file and
 * row within its download.
 */
interface ContactsCursor {
  targets: (string | null)[];
  k: number;
  job: string | null;
  file: number;
  offset: number;
}

interface ExportedContact {
  contact_id?: string;
  email?: string;
  first_name?: string;
  last_name?: string;
  custom_fields?: Record<string, unknown>;
  [field: string]: unknown;
}

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
 * send-only. Marketing contacts are listed whole only through an asynchronous export job
 * (`POST /v3/marketing/contacts/exports`, polled until `ready`, then its `urls` downloaded, newline
 * separated JSON, maybe gzipped); their records name no lists and no unsubscribes, so each list is
 * exported on its own and the unsubscribed are those on the global unsubscribes or in any
 * suppression group (docs/decisions/provider-imports.md).
 */
export function sendgridClient(base: string, apiKey: string, http: ProviderHttpOptions): ProviderClient {
  // Names this key's kept downloads, so no other key is answered from them.
  const keyTag = createHash('sha256').update(apiKey).digest('hex').slice(0, 16);
  const get = <T>(pathAndQuery: string): Promise<T> => call<T>('GET', pathAndQuery);
  const call = async <T>(method: 'GET' | 'POST', pathAndQuery: string, body?: unknown): Promise<T> => {
    const relative = new URL(pathAndQuery, 'http://sendgrid.invalid');
    const url = endpoint(base, relative.pathname);
    url.search = relative.search;
    const answer = await requestJson(method, url, { authorization: `Bearer ${apiKey}` }, http, body);
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

  /** Every address that opted out: the global unsubscribes and every suppression group's. */
  const unsubscribed = async (): Promise<Set<string>> => {
    const out = new Set<string>();
    let offset: string | null = null;
    do {
      const page: { rows: { email: string }[]; next: string | null } = await offsetPage<{ email: string }>(
        '/v3/suppression/unsubscribes',
        SUPPRESSION_LIMIT,
        offset,
      );
      for (const r of page.rows) out.add(r.email.toLowerCase());
      offset = page.next;
    } while (offset !== null);
    for (const r of await get<{ email: string }[]>('/v3/asm/suppressions')) out.add(r.email.toLowerCase());
    return out;
  };
  const exportRows = async (job: string, file: number, url: string): Promise<ExportedContact[]> => {
    const bytes = await download(new URL(url), http, DOWNLOAD_MAX);
    const rows: ExportedContact[] = [];
    for (const line of bytes.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      try {
        rows.push(JSON.parse(line) as ExportedContact);
      } catch {
        throw new ProviderError('failed', `SendGrid's export ${job} file ${file} holds a line that is no JSON`);
      }
    }
    return rows;
  };
  const contactsPage = async (cursor: string | null): Promise<SourcePage> => {
    let at: ContactsCursor;
    if (cursor === null) {
      const lists: string[] = [];
      let next: string | null = null;
      do {
        const page: { rows: { id: string }[]; next: string | null } = await tokenPage<{ id: string }>(
          '/v3/marketing/lists?page_size=1000',
          next,
        );
        lists.push(...page.rows.map((l) => l.id));
        next = page.next;
      } while (next !== null);
      at = { targets: [...lists, null], k: 0, job: null, file: 0, offset: 0 };
    } else at = JSON.parse(cursor) as ContactsCursor;
    const list = at.targets[at.k] ?? null;
    if (at.job === null) {
      // A crash before this step's checkpoint leaves the job unread at SendGrid, where it expires.
      const job = await call<{ id: string }>('POST', '/v3/marketing/contacts/exports', {
        file_type: 'json',
        max_file_size: EXPORT_FILE_MB,
        ...(list === null ? {} : { list_ids: [list] }),
      });
      return { items: [], next: JSON.stringify({ ...at, job: job.id }), waitMs: http.exportPollMs };
    }
    const job = await get<{ status: string; urls?: string[]; message?: string }>(
      `/v3/marketing/contacts/exports/${encodeURIComponent(at.job)}`,
    );
    if (job.status === 'pending') return { items: [], next: JSON.stringify(at), waitMs: http.exportPollMs };
    if (job.status !== 'ready')
      throw new ProviderError(
        'failed',
        `SendGrid's contact export ${at.job} ended ${job.status}${job.message ? `: ${job.message}` : ''}`,
      );
    const urls = job.urls ?? [];
    const url = urls[at.file];
    const rows =
      url === undefined
        ? []
        : await http.kept.get(`sendgrid:${keyTag}:${at.job}:${at.file}`, () => exportRows(at.job!, at.file, url));
    const optedOut = await http.kept.get(`sendgrid:${keyTag}:${at.job}:unsubscribed`, unsubscribed);
    const items = rows.slice(at.offset, at.offset + CONTACTS_PAGE).flatMap((c): SourceItem[] => {
      if (typeof c.email !== 'string' || c.email === '') return [];
      const name = [c.first_name, c.last_name].filter((x) => typeof x === 'string' && x.trim() !== '').join(' ');
      const attributes: Record<string, string> = {};
      for (const field of RESERVED_ATTRIBUTES) {
        const v = c[field];
        if (typeof v === 'string' && v !== '') attributes[field] = v;
      }
      for (const [k, v] of Object.entries(c.custom_fields ?? {}))
        if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') attributes[k] = String(v);
      const address = c.email.toLowerCase();
      return [
        {
          resource: 'contacts',
          sourceId: address,
          email: c.email,
          name: name || null,
          attributes,
          subscribed: !optedOut.has(address),
          audienceSourceIds: list === null ? [] : [list],
        },
      ];
    });
    const next: ContactsCursor | null =
      at.offset + CONTACTS_PAGE < rows.length
        ? { ...at, offset: at.offset + CONTACTS_PAGE }
        : at.file + 1 < urls.length
          ? { ...at, file: at.file + 1, offset: 0 }
          : at.k + 1 < at.targets.length
            ? { ...at, k: at.k + 1, job: null, file: 0, offset: 0 }
            : null;
    return { items, next: next && JSON.stringify(next), nextStartsWork: next?.job === null };
  };

  return {
    provider: 'sendgrid',
    offers: ['suppressions', 'audiences', 'contacts', 'templates', 'webhooks', 'domains', 'api-keys'],

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
        case 'contacts': {
          const body = await get<{ contact_count?: number }>('/v3/marketing/contacts/count');
          return { count: body.contact_count ?? 0, more: false };
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
        case 'contacts':
          return contactsPage(cursor);
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
