import type { SuppressionReason } from '../../domain/suppressions/events.ts';
import { commonError, endpoint, getJson, messageOf, type JsonAnswer, type ProviderHttpOptions } from './http.ts';
import { convertTemplate } from './placeholders.ts';
import { ProviderError, type ProviderClient, type SourceItem, type SourcePage } from './port.ts';

export const POSTMARK_BASE_URL = 'https://api.postmarkapp.com';

/** Postmark's `count` maximum on its offset-paged lists. */
const COUNT = 500;

const REASONS: Record<string, SuppressionReason> = {
  HardBounce: 'bounce',
  SpamComplaint: 'complaint',
  ManualSuppression: 'manual',
};

/** Postmark's webhook triggers that have an equal of ours. */
const TRIGGERS: Record<string, string> = {
  Delivery: 'email.delivered',
  Bounce: 'email.bounced',
  SpamComplaint: 'email.complained',
  Open: 'email.opened',
  Click: 'email.clicked',
  SubscriptionChange: 'contact.unsubscribed',
};

interface Webhook {
  ID: number;
  Url: string;
  MessageStream?: string;
  Triggers?: Record<string, { Enabled?: boolean }>;
}

/**
 * Postmark (https://postmarkapp.com/developer): a server's data read with its server token in
 * `X-Postmark-Server-Token`; lists paged by `count` and `offset` with `TotalCount`; refusals as
 * `{ErrorCode, Message}` (10: a bad or missing token). Suppressions are per message stream, one
 * unpaged dump each. A server token has no contacts or lists, and its domains and keys belong to
 * the account token: those are not offered. Postmark has no send-only token.
 */
export function postmarkClient(base: string, apiKey: string, http: ProviderHttpOptions): ProviderClient {
  const get = async <T>(path: string, query: Record<string, string | number | null> = {}): Promise<T> => {
    const answer = await getJson(endpoint(base, path, query), { 'x-postmark-server-token': apiKey }, http);
    const refused = refusal(answer);
    if (refused) throw refused;
    const common = commonError('Postmark', answer);
    if (common) throw common;
    if (!answer.body || typeof answer.body !== 'object')
      throw new ProviderError('failed', `Postmark answered ${path} with no JSON object`);
    return answer.body as T;
  };
  const streams = async () =>
    (
      await get<{ MessageStreams: { ID: string; MessageStreamType: string }[] }>('/message-streams')
    ).MessageStreams.filter((s) => s.MessageStreamType !== 'Inbound');
  const templates = (offset: number, count = COUNT) =>
    get<{ TotalCount: number; Templates: { TemplateId: number; Name: string; Active: boolean }[] }>('/templates', {
      count,
      offset,
      TemplateType: 'Standard',
    });

  return {
    provider: 'postmark',
    offers: ['suppressions', 'templates', 'webhooks'],

    async check() {
      await get('/server');
    },

    async count(resource) {
      if (resource === 'suppressions') {
        let count = 0;
        for (const s of await streams())
          count += (
            await get<{ Suppressions: unknown[] }>(`/message-streams/${encodeURIComponent(s.ID)}/suppressions/dump`)
          ).Suppressions.length;
        return { count, more: false };
      }
      if (resource === 'templates') {
        const first = await templates(0, 100);
        return { count: first.TotalCount, more: first.TotalCount > first.Templates.length };
      }
      if (resource === 'webhooks')
        return { count: (await get<{ Webhooks: unknown[] }>('/webhooks')).Webhooks.length, more: false };
      return { count: 0, more: false };
    },

    async page(resource, cursor) {
      if (resource === 'suppressions') {
        // One stream's dump per page; the cursor is the index of the stream.
        const index = cursor === null ? 0 : Number(cursor);
        const all = await streams();
        const stream = all[index];
        if (!stream) return { items: [], next: null };
        const dump = await get<{
          Suppressions: { EmailAddress: string; SuppressionReason: string; Origin?: string }[];
        }>(`/message-streams/${encodeURIComponent(stream.ID)}/suppressions/dump`);
        const items: SourceItem[] = dump.Suppressions.map((s) => ({
          resource: 'suppressions',
          sourceId: s.EmailAddress.toLowerCase(),
          email: s.EmailAddress,
          reason: REASONS[s.SuppressionReason] ?? 'manual',
          detail: `postmark: ${s.SuppressionReason}${s.Origin ? ` (${s.Origin})` : ''} on ${stream.ID}`,
        }));
        return { items, next: index + 1 < all.length ? String(index + 1) : null };
      }
      if (resource === 'templates') {
        const offset = cursor === null ? 0 : Number(cursor);
        const page = await templates(offset);
        const items = await Promise.all(
          page.Templates.map(async (row): Promise<SourceItem> => {
            const t = await get<{
              TemplateId: number;
              Name: string;
              Subject?: string;
              HtmlBody?: string;
              Active: boolean;
            }>(`/templates/${row.TemplateId}`);
            // Mustachio: `{{name}}`, `{{{name}}}`, dotted names; sections stay as text.
            const converted = convertTemplate(t.Subject ?? '', t.HtmlBody ?? '');
            return {
              resource: 'templates',
              sourceId: String(t.TemplateId),
              name: t.Name,
              subject: converted.subject,
              html: converted.html,
              variables: converted.variables,
              live: t.Active,
              warnings: converted.warnings,
            };
          }),
        );
        const next = offset + page.Templates.length;
        return { items, next: page.Templates.length > 0 && next < page.TotalCount ? String(next) : null };
      }
      if (resource === 'webhooks') {
        const hooks = (await get<{ Webhooks: Webhook[] }>('/webhooks')).Webhooks;
        const items: SourceItem[] = hooks.map((w) => ({
          resource: 'webhooks',
          sourceId: String(w.ID),
          url: w.Url,
          eventTypes: Object.entries(w.Triggers ?? {}).flatMap(([name, t]) =>
            t.Enabled && TRIGGERS[name] ? [TRIGGERS[name]] : [],
          ),
          description: `Imported from Postmark${w.MessageStream ? ` (${w.MessageStream})` : ''}`,
        }));
        return { items, next: null } satisfies SourcePage;
      }
      return { items: [], next: null };
    },
  };
}

/** Postmark's 401 (ErrorCode 10): a token it does not take. */
function refusal(answer: JsonAnswer): ProviderError | null {
  if (answer.status !== 401 && answer.status !== 403) return null;
  return new ProviderError('refused', `Postmark refused the token: ${messageOf(answer.body)}`);
}
