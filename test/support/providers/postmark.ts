import { startProviderServer, type Answer, type ProviderServer, type SeenRequest } from './server.ts';

export const POSTMARK_TOKEN = '00000000-1111-2222-3333-444444444444';

export interface PostmarkData {
  streams: { ID: string; MessageStreamType: 'Transactional' | 'Broadcasts' | 'Inbound' }[];
  suppressions: Map<string, { EmailAddress: string; SuppressionReason: string; Origin: string; CreatedAt: string }[]>;
  templates: {
    TemplateId: number;
    Name: string;
    Subject: string;
    HtmlBody: string;
    Active: boolean;
    TemplateType: string;
  }[];
  webhooks: { ID: number; Url: string; MessageStream: string; Triggers: Record<string, { Enabled: boolean }> }[];
}

/** Seed: `suppressions` addresses over two outbound streams (one address in both), templates, webhooks. */
export function postmarkData(suppressions: number, templates: number): PostmarkData {
  const reasons = ['HardBounce', 'SpamComplaint', 'ManualSuppression'];
  const at = new Date().toISOString();
  const row = (i: number) => ({
    EmailAddress: `Blocked${i}@Example.test`,
    SuppressionReason: reasons[i % 3]!,
    Origin: i % 3 === 2 ? 'Customer' : 'Recipient',
    CreatedAt: at,
  });
  const half = Math.floor(suppressions / 2);
  return {
    streams: [
      { ID: 'outbound', MessageStreamType: 'Transactional' },
      { ID: 'broadcast', MessageStreamType: 'Broadcasts' },
      { ID: 'inbound', MessageStreamType: 'Inbound' },
    ],
    suppressions: new Map([
      ['outbound', Array.from({ length: half + 1 }, (_, i) => row(i))],
      ['broadcast', Array.from({ length: suppressions - half }, (_, i) => row(half + i))],
    ]),
    templates: Array.from({ length: templates }, (_, i) => ({
      TemplateId: 1000 + i,
      Name: `Postmark template ${i}`,
      Subject: 'Receipt for {{product_name}}',
      HtmlBody: '<p>Hi {{ name }}, {{#each items}}{{description}}{{/each}} {{{ action_url }}}</p>',
      Active: i % 2 === 0,
      TemplateType: 'Standard',
    })),
    webhooks: [
      {
        ID: 7,
        Url: 'https://hooks.example.net/postmark',
        MessageStream: 'outbound',
        Triggers: {
          Open: { Enabled: true },
          Click: { Enabled: false },
          Delivery: { Enabled: true },
          Bounce: { Enabled: true },
          SpamComplaint: { Enabled: false },
          SubscriptionChange: { Enabled: false },
        },
      },
    ],
  };
}

const refusal: Answer = {
  status: 401,
  body: {
    ErrorCode: 10,
    Message:
      'The Server Token you provided in the X-Postmark-Server-Token request header was invalid. Please verify that you are using a valid token.',
  },
};

/**
 * Postmark's API on loopback (https://postmarkapp.com/developer): `X-Postmark-Server-Token`,
 * `count`/`offset` paging with `TotalCount` (count at most 500), errors `{ErrorCode, Message}`.
 */
export function startPostmarkServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  data: PostmarkData,
): Promise<ProviderServer> {
  const route = (req: SeenRequest): Answer => {
    if (req.headers['x-postmark-server-token'] !== POSTMARK_TOKEN) return refusal;
    const parts = req.path.split('/').filter(Boolean);
    if (parts[0] === 'server') return { status: 200, body: { ID: 1, Name: 'Production' } };
    if (parts[0] === 'message-streams' && parts.length === 1)
      return { status: 200, body: { MessageStreams: data.streams, TotalCount: data.streams.length } };
    if (parts[0] === 'message-streams' && parts[2] === 'suppressions' && parts[3] === 'dump')
      return { status: 200, body: { Suppressions: data.suppressions.get(parts[1]!) ?? [] } };
    if (parts[0] === 'templates' && parts.length === 1) {
      const count = Number(req.query.get('count'));
      const offset = Number(req.query.get('offset'));
      if (!Number.isInteger(count) || count < 1 || count > 500 || !Number.isInteger(offset))
        return { status: 422, body: { ErrorCode: 1101, Message: 'The count and offset parameters are required.' } };
      const standard = data.templates.filter((x) => x.TemplateType === req.query.get('TemplateType'));
      return {
        status: 200,
        body: {
          TotalCount: standard.length,
          Templates: standard.slice(offset, offset + count).map(({ TemplateId, Name, Active, TemplateType }) => ({
            TemplateId,
            Name,
            Active,
            TemplateType,
            Alias: null,
          })),
        },
      };
    }
    if (parts[0] === 'templates' && parts.length === 2) {
      const tpl = data.templates.find((x) => String(x.TemplateId) === parts[1]);
      return tpl
        ? { status: 200, body: tpl }
        : { status: 422, body: { ErrorCode: 1101, Message: 'Template not found.' } };
    }
    if (parts[0] === 'webhooks') return { status: 200, body: { Webhooks: data.webhooks } };
    return { status: 404, body: { ErrorCode: 404, Message: 'Not found' } };
  };
  return startProviderServer(t, route, (seconds) => ({
    status: 429,
    body: { ErrorCode: 429, Message: 'Too many requests' },
    headers: { 'retry-after': String(seconds) },
  }));
}
