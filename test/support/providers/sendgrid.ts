import { gzipSync } from 'node:zlib';
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
    'asm.groups.suppressions.read',
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
  [/^\/v3\/asm\//, 'asm.groups.suppressions.read'],
  [/^\/v3\/templates/, 'templates.read'],
  [/^\/v3\/user\/webhooks\//, 'user.webhooks.event.settings.read'],
  [/^\/v3\/whitelabel\//, 'whitelabel.read'],
  [/^\/v3\/api_keys/, 'api_keys.read'],
];

export interface SendgridData {
  suppressions: Record<string, { created: number; email: string; reason?: string; status?: string }[]>;
  lists: { id: string; name: string; contact_count: number }[];
  /** Marketing contacts with the ids of the lists holding them (their export records name none). */
  contacts: {
    contact_id: string;
    email: string;
    first_name: string;
    last_name: string;
    city: string;
    custom_fields: Record<string, string | number>;
    lists: string[];
  }[];
  /** Suppression group entries (`GET /v3/asm/suppressions`). */
  groupSuppressions: { email: string; group_id: number; group_name: string; created_at: number }[];
  /** Export jobs end in `failure` while set. */
  failExports: boolean;
  /** The next this many polls of an export past its first are answered 429. */
  throttlePolls: number;
  /** Rows per export file: a larger export comes in more than one. */
  exportFileRows: number;
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

/**
 * Seed: `bounces` bounces (past a page of 500), spam reports, unsubscribes, invalid addresses,
 * three lists, `contacts` marketing contacts (a third in each list, every fifth in a second
 * list, every tenth in none; every 50th from 7 globally unsubscribed, from 13 in a suppression
 * group), templates, a webhook.
 */
export function sendgridData(bounces: number, contacts = 0): SendgridData {
  const created = Math.floor(Date.now() / 1000);
  const people = Array.from({ length: contacts }, (_, i) => ({
    contact_id: `c-${i}`,
    email: `Person${i}@sg-contacts.test`,
    first_name: `Person${i}`,
    last_name: 'Grid',
    city: i % 2 ? 'Lisbon' : '',
    custom_fields: { plan: i % 3 ? 'free' : 'pro', seats: i % 7 },
    lists: i % 10 === 9 ? [] : i % 5 === 0 ? [`list-${i % 3}`, `list-${(i + 1) % 3}`] : [`list-${i % 3}`],
  }));
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
      unsubscribes: [
        ...Array.from({ length: 8 }, (_, i) => ({ created, email: `gone${i}@sg.test` })),
        ...people.filter((_, i) => i % 50 === 7).map((p) => ({ created, email: p.email.toLowerCase() })),
      ],
      blocks: [{ created, email: 'blocked@sg.test', reason: 'ISP block', status: '4.0.0' }],
    },
    lists: Array.from({ length: 3 }, (_, i) => ({
      id: `list-${i}`,
      name: `SendGrid list ${i}`,
      contact_count: people.filter((p) => p.lists.includes(`list-${i}`)).length,
    })),
    contacts: people,
    groupSuppressions: people
      .filter((_, i) => i % 50 === 13)
      .map((p) => ({ email: p.email, group_id: 42, group_name: 'Newsletter', created_at: created })),
    failExports: false,
    throttlePolls: 0,
    exportFileRows: 500,
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
 * Contacts through the export job: `POST /v3/marketing/contacts/exports` (202 `{id}`), its
 * status `pending` at the first poll and then `ready` with `urls` of gzipped newline separated
 * JSON files (records without lists, as SendGrid writes them), downloaded without the key.
 */
export function startSendgridServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  data: SendgridData,
): Promise<ProviderServer> {
  // The real host in `_metadata.next`: the adapter must follow it on its configured base.
  const base = 'https://api.sendgrid.com';
  const rateLimited = (seconds: number): Answer => ({
    status: 429,
    body: { errors: [{ field: null, message: 'too many requests' }] },
    headers: {
      'x-ratelimit-limit': '600',
      'x-ratelimit-remaining': '0',
      'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + seconds),
    },
  });
  const exports = new Map<string, { list: string | null; polls: number }>();
  const route = (req: SeenRequest): Answer => {
    const file = /^\/exports\/([^/]+)\/(\d+)\.json\.gz$/.exec(req.path);
    if (file) {
      // The signed storage URL: its own authority, no key.
      const job = exports.get(file[1]!);
      if (!job || req.headers.authorization !== undefined) return { status: 403, body: 'AccessDenied' };
      const n = Number(file[2]);
      const lines = exportedBy(job.list)
        .slice(n * data.exportFileRows, (n + 1) * data.exportFileRows)
        .map(({ lists: _, ...record }) => JSON.stringify({ ...record, created_at: '2024-01-01T00:00:00Z' }));
      return { status: 200, body: gzipSync(lines.join('\n')), headers: { 'content-type': 'binary/octet-stream' } };
    }
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
    if (req.path === '/v3/marketing/lists') {
      if (Number(req.query.get('page_size') ?? 100) > 1000) return errors(400, 'page_size must be at most 1000');
      return tokenPage(data.lists);
    }
    if (req.path === '/v3/marketing/contacts/count')
      return { status: 200, body: { contact_count: data.contacts.length, billable_count: data.contacts.length } };
    if (req.path === '/v3/marketing/contacts/exports' && req.method === 'POST') {
      const body = JSON.parse(req.body || '{}') as { list_ids?: string[]; file_type?: string };
      if (body.file_type !== 'json') return errors(400, 'this loopback writes json files only');
      const list = body.list_ids?.[0] ?? null;
      if (list !== null && !data.lists.some((l) => l.id === list)) return errors(404, 'list not found');
      const id = `export-${exports.size + 1}`;
      exports.set(id, { list, polls: 0 });
      return { status: 202, body: { id, _metadata: { self: `${base}${req.path}/${id}` } } };
    }
    const exportJob = /^\/v3\/marketing\/contacts\/exports\/([^/]+)$/.exec(req.path);
    if (exportJob) {
      const job = exports.get(exportJob[1]!);
      if (!job) return errors(404, 'export not found');
      job.polls++;
      if (job.polls > 1 && data.throttlePolls > 0) {
        data.throttlePolls--;
        return rateLimited(3);
      }
      const status = job.polls === 1 ? 'pending' : data.failExports ? 'failure' : 'ready';
      const files = Math.max(1, Math.ceil(exportedBy(job.list).length / data.exportFileRows));
      return {
        status: 200,
        body: {
          id: exportJob[1],
          status,
          export_type: 'contacts',
          created_at: new Date().toISOString(),
          ...(status === 'failure' ? { message: 'export could not be built' } : {}),
          ...(status === 'ready'
            ? {
                urls: Array.from(
                  { length: files },
                  (_, n) => `http://${req.headers.host}/exports/${exportJob[1]}/${n}.json.gz`,
                ),
                expires_at: new Date(Date.now() + 72 * 3600_000).toISOString(),
              }
            : {}),
        },
      };
    }
    if (req.path === '/v3/asm/suppressions') return { status: 200, body: data.groupSuppressions };
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
  const exportedBy = (list: string | null) =>
    list === null ? data.contacts : data.contacts.filter((c) => c.lists.includes(list));
  return startProviderServer(t, route, rateLimited);
}
