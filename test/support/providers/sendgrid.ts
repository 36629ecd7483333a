import { startProviderServer, type Answer, type ProviderServer, type SeenRequest } from './server.ts';

/** Keys the loopback SendGrid knows, with their scopes: full, send-only, and one that reads suppressions only. */
export const SENDGRID_KEYS = {
  full: 'SG.full.0000000000000000000000',
  sendOnly: 'SG.send.0000000000000000000000',
  suppressionsOnly: 'SG.supp.0000000000000000000000',
};
const SCOPES: Record<string, string[]> = {
  [SENDGRID_KEYS.full]: [
    'mail.send',
    'suppression.read',
    'marketing.read',
    'templates.read',
    'user.webhooks.event.settings.read',
    'whitelabel.read',
    'api_keys.read',
  ],
  [SENDGRID_KEYS.sendOnly]: ['mail.send', 'sender_verification_eligible'],
  [SENDGRID_KEYS.suppressionsOnly]: ['suppression.read'],
};
const NEEDS: [RegExp, string][] = [
  [/^\/v3\/suppression\//, 'suppression.read'],
  [/^\/v3\/marketing\//, 'marketing.read'],
  [/^\/v3\/templates/, 'templates.read'],
  [/^\/v3\/user\/webhooks\//, 'user.webhooks.event.settings.read'],
  [/^\/v3\/whitelabel\//, 'whitelabel.read'],
  [/^\/v3\/api_keys/, 'api_keys.read'],
];

export interface SendgridData {
  suppressions: Record<string, { created: number; email: string; reason?: string; status?: string }[]>;
  lists: { id: string; name: string; contact_count: number }[];
  templates: {
    id: string;
    name: string;
    generation: string;
    versions: { id: string; active: number; subject: string; html_content: string }[];
  }[];
  webhooks: ({ id: string; url: string; enabled: boolean; friendly_name: string } & Record<string, unknown>)[];
  domains: { id: number; domain: string; valid: boolean }[];
  keys: { api_key_id: string; name: string }[];
}

/** Seed: `bounces` bounces (past a page of 500), spam reports, unsubscribes, invalid addresses, lists, templates, a webhook. */
export function sendgridData(bounces: number): SendgridData {
  const created = Math.floor(Date.now() / 1000);
  return {
    suppressions: {
      bounces: Array.from({ length: bounces }, (_, i) => ({
        created,
        email: `hard${i}@sg.test`,
        reason: '550 5.1.1 unknown',
        status: '5.1.1',
      })),
      invalid_emails: [
        { created, email: 'not-really@sg.test', reason: 'Mail domain mentioned in email address is unknown' },
      ],
      spam_reports: Array.from({ length: 12 }, (_, i) => ({ created, email: `spam${i}@sg.test` })),
      unsubscribes: Array.from({ length: 8 }, (_, i) => ({ created, email: `gone${i}@sg.test` })),
      blocks: [{ created, email: 'blocked@sg.test', reason: 'ISP block', status: '4.0.0' }],
    },
    lists: Array.from({ length: 3 }, (_, i) => ({ id: `list-${i}`, name: `SendGrid list ${i}`, contact_count: 10 })),
    templates: [
      {
        id: 'd-0001',
        name: 'SendGrid receipt',
        generation: 'dynamic',
        versions: [
          { id: 'v1', active: 0, subject: 'Old', html_content: '<p>old</p>' },
          {
            id: 'v2',
            active: 1,
            subject: 'Thanks {{first_name}}',
            html_content: '<p>{{{total}}} for {{user.plan}}</p>',
          },
        ],
      },
    ],
    webhooks: [
      {
        id: 'wh-1',
        url: 'https://hooks.example.net/sendgrid',
        enabled: true,
        friendly_name: 'Events',
        delivered: true,
        bounce: true,
        open: false,
        click: true,
        spam_report: true,
        dropped: true,
      },
    ],
    domains: [{ id: 1, domain: 'sg-mail.example.net', valid: true }],
    keys: [{ api_key_id: 'key-1', name: 'Web app' }],
  };
}

const errors = (status: number, message: string): Answer => ({ status, body: { errors: [{ field: null, message }] } });

/**
 * SendGrid's v3 API on loopback: `Authorization: Bearer`, `/v3/scopes`, suppressions by
 * `limit`/`offset` (arrays), lists and templates by `page_size`/`page_token` with
 * `_metadata.next`, errors `{errors: [{field, message}]}`, 429 with `X-RateLimit-Reset`.
 */
export function startSendgridServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  data: SendgridData,
): Promise<ProviderServer> {
  // The real host in `_metadata.next`: the adapter must follow it on its configured base.
  const base = 'https://api.sendgrid.com';
  const route = (req: SeenRequest): Answer => {
    const key = (req.headers.authorization ?? '').replace(/^Bearer /, '');
    const scopes = SCOPES[key];
    if (!scopes) return errors(401, 'authorization required');
    if (req.path === '/v3/scopes') return { status: 200, body: { scopes } };
    const need = NEEDS.find(([pattern]) => pattern.test(req.path));
    if (need && !scopes.includes(need[1])) return errors(403, 'access forbidden');
    const limit = Number(req.query.get('limit') ?? 500);
    const offset = Number(req.query.get('offset') ?? 0);
    const tokenPage = <T>(rows: T[]): Answer => {
      const size = Number(req.query.get('page_size') ?? 100);
      const start = Number(req.query.get('page_token') ?? 0);
      const next =
        start + size < rows.length ? `${base}${req.path}?page_size=${size}&page_token=${start + size}` : undefined;
      return {
        status: 200,
        body: {
          result: rows.slice(start, start + size),
          _metadata: { self: `${base}${req.path}`, next, count: rows.length },
        },
      };
    };
    const suppression = /^\/v3\/suppression\/([a-z_]+)$/.exec(req.path);
    if (suppression) {
      const rows = data.suppressions[suppression[1]!];
      if (!rows) return errors(404, 'not found');
      if (limit > 500) return errors(400, 'limit must be at most 500');
      return { status: 200, body: rows.slice(offset, offset + limit) };
    }
    if (req.path === '/v3/marketing/lists') return tokenPage(data.lists);
    if (req.path === '/v3/templates')
      return tokenPage(data.templates.map(({ id, name, generation }) => ({ id, name, generation })));
    const template = /^\/v3\/templates\/([^/]+)$/.exec(req.path);
    if (template) {
      const tpl = data.templates.find((x) => x.id === template[1]);
      return tpl ? { status: 200, body: tpl } : errors(404, 'resource not found');
    }
    if (req.path === '/v3/user/webhooks/event/settings/all')
      return { status: 200, body: { max_allowed: 5, webhooks: data.webhooks } };
    if (req.path === '/v3/whitelabel/domains') return { status: 200, body: data.domains.slice(offset, offset + limit) };
    if (req.path === '/v3/api_keys') return { status: 200, body: { result: data.keys } };
    return errors(404, 'not found');
  };
  return startProviderServer(t, route, (seconds) => ({
    status: 429,
    body: { errors: [{ field: null, message: 'too many requests' }] },
    headers: {
      'x-ratelimit-limit': '600',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + seconds),
    },
  }));
}
