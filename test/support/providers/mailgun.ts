import { startProviderServer, type Answer, type ProviderServer, type SeenRequest } from './server.ts';

export const MAILGUN_KEY = 'key-0000000000000000000000000000mg01';

interface Member {
  address: string;
  name: string;
  subscribed: boolean;
  vars: Record<string, unknown>;
}

export interface MailgunData {
  domains: { name: string; state: string }[];
  /** Per domain, per suppression list (`bounces`, `complaints`, `unsubscribes`), its rows. */
  suppressions: Map<string, Record<string, { address: string; code?: string; error?: string; created_at: string }[]>>;
  lists: { address: string; name: string; description: string; members_count: number }[];
  members: Map<string, Member[]>;
  templates: Map<string, { name: string; description: string; subject: string; html: string; active: boolean }[]>;
  webhooks: Map<string, Record<string, { urls: string[] }>>;
  keys: { id: string; description: string; role: string; kind: string }[];
  /** Lists that answer 500 whatever is asked (`templates`): a provider failing on one resource. */
  failing: Set<string>;
}

const at = () => new Date().toUTCString();
const pad = (i: number) => String(i).padStart(4, '0');

/**
 * Seed: two domains with suppressions (`bounces` bounces on the first, one address on both), two
 * lists sharing members, templates, webhooks, keys.
 */
export function mailgunData(bounces = 130): MailgunData {
  const bounced = (d: string, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      address: `bounce${pad(i)}@${d}`,
      code: '550',
      error: 'No such user',
      created_at: at(),
    }));
  const member = (i: number): Member => ({
    address: `sub${pad(i)}@lists.test`,
    name: `Subscriber ${i}`,
    subscribed: i % 8 !== 7,
    vars: { city: i % 2 ? 'Lyon' : 'Oslo', age: 30 + (i % 10), nested: { no: true } },
  });
  const alpha = Array.from({ length: 150 }, (_, i) => member(i));
  const beta = Array.from({ length: 30 }, (_, i) => member(140 + i));
  return {
    domains: [
      { name: 'mg1.example.net', state: 'active' },
      { name: 'mg2.example.net', state: 'unverified' },
    ],
    suppressions: new Map([
      [
        'mg1.example.net',
        {
          bounces: bounced('mg1.example.net', bounces),
          complaints: Array.from({ length: 10 }, (_, i) => ({
            address: `complaint${pad(i)}@x.test`,
            created_at: at(),
          })),
          unsubscribes: Array.from({ length: 15 }, (_, i) => ({ address: `unsub${pad(i)}@x.test`, created_at: at() })),
        },
      ],
      [
        'mg2.example.net',
        {
          bounces: bounced('mg2.example.net', 20),
          complaints: [{ address: 'complaint0000@x.test', created_at: at() }],
          unsubscribes: [],
        },
      ],
    ]),
    lists: [
      { address: 'alpha@lists.test', name: 'Alpha', description: 'The first list', members_count: 150 },
      { address: 'beta@lists.test', name: 'Beta', description: '', members_count: 30 },
    ],
    members: new Map([
      ['alpha@lists.test', alpha],
      ['beta@lists.test', beta],
    ]),
    templates: new Map([
      [
        'mg1.example.net',
        [
          {
            name: 'order-shipped',
            description: 'Shipping note',
            subject: 'Order {{order_id}} shipped',
            html: '<p>{{#if vip}}Dear {{name}}{{/if}} order {{{ order_id }}} is on its way</p>',
            active: true,
          },
        ],
      ],
      ['mg2.example.net', []],
    ]),
    webhooks: new Map<string, Record<string, { urls: string[] }>>([
      [
        'mg1.example.net',
        {
          delivered: { urls: ['https://hooks.example.net/mailgun'] },
          permanent_fail: { urls: ['https://hooks.example.net/mailgun'] },
          opened: { urls: ['https://hooks.example.net/mailgun', 'https://hooks2.example.net/mg'] },
          accepted: { urls: ['https://hooks2.example.net/mg'] },
        },
      ],
      ['mg2.example.net', {}],
    ]),
    keys: [
      { id: 'k1', description: 'Backend', role: 'admin', kind: 'user' },
      { id: 'k2', description: 'Sending', role: 'sending', kind: 'domain' },
    ],
    failing: new Set(),
  };
}

/** The real host a `paging.next` carries: the adapter must follow it on its configured base. */
const HOST = 'https://api.mailgun.net';

/**
 * Mailgun's API on loopback (https://documentation.mailgun.com): HTTP Basic `api:<key>`,
 * `/v4/domains` by `limit`/`skip`, other lists by the `paging.next` URL (`page=next&address=…` or
 * `p=…`) ending with an empty page, 401 `Forbidden` as text, errors as `{message}`.
 */
export function startMailgunServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  data: MailgunData,
): Promise<ProviderServer> {
  const route = (req: SeenRequest): Answer => {
    if (req.headers.authorization !== `Basic ${Buffer.from(`api:${MAILGUN_KEY}`).toString('base64')}`)
      return { status: 401, body: 'Forbidden' };
    const limit = Number(req.query.get('limit') ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000)
      return { status: 400, body: { message: 'Invalid limit' } };
    /** Rows by a key, after the one `page=next` names, with the next page's URL. */
    const paged = <T>(rows: T[], key: (row: T) => string, param: string): Answer => {
      const sorted = [...rows].sort((a, b) => key(a).localeCompare(key(b)));
      const after = req.query.get('page') === 'next' ? req.query.get(param) : null;
      const page = sorted.filter((r) => after === null || key(r) > after).slice(0, limit);
      const last = page.length > 0 ? key(page[page.length - 1]!) : (after ?? '');
      return {
        status: 200,
        body: {
          items: page,
          paging: {
            first: `${HOST}${req.path}?limit=${limit}`,
            next: `${HOST}${req.path}?page=next&${param}=${encodeURIComponent(last)}&limit=${limit}`,
            previous: `${HOST}${req.path}?page=prev&limit=${limit}`,
            last: `${HOST}${req.path}?page=last&limit=${limit}`,
          },
        },
      };
    };
    const parts = req.path.split('/').filter(Boolean).map(decodeURIComponent);
    if (req.path === '/v4/domains') {
      const skip = Number(req.query.get('skip') ?? 0);
      return {
        status: 200,
        body: { total_count: data.domains.length, items: data.domains.slice(skip, skip + limit) },
      };
    }
    if (req.path === '/v1/keys') return { status: 200, body: { total_count: data.keys.length, items: data.keys } };
    if (parts[0] === 'v3' && parts[1] === 'lists' && parts[2] === 'pages')
      return paged(data.lists, (l) => l.address, 'address');
    if (parts[0] === 'v3' && parts[1] === 'lists' && parts[3] === 'members' && parts[4] === 'pages') {
      const members = data.members.get(parts[2]!);
      return members
        ? paged(members, (m) => m.address, 'address')
        : { status: 404, body: { message: 'List not found' } };
    }
    if (parts[0] === 'v3' && parts[1] === 'domains' && parts[3] === 'webhooks')
      return { status: 200, body: { webhooks: data.webhooks.get(parts[2]!) ?? {} } };
    const domain = parts[1]!;
    if (data.failing.has(parts[2] ?? '')) return { status: 500, body: { message: 'Internal Server Error' } };
    if (parts[0] === 'v3' && ['bounces', 'complaints', 'unsubscribes'].includes(parts[2]!)) {
      const lists = data.suppressions.get(domain);
      return lists
        ? paged(lists[parts[2]!] ?? [], (r) => r.address, 'address')
        : { status: 404, body: { message: 'Domain not found' } };
    }
    if (parts[0] === 'v3' && parts[2] === 'templates' && parts.length === 3)
      return paged(
        (data.templates.get(domain) ?? []).map(({ name, description }) => ({ name, description, createdAt: at() })),
        (x) => x.name,
        'p',
      );
    if (parts[0] === 'v3' && parts[2] === 'templates' && parts.length === 4) {
      const tpl = (data.templates.get(domain) ?? []).find((x) => x.name === parts[3]);
      if (!tpl) return { status: 404, body: { message: 'template not found' } };
      return {
        status: 200,
        body: {
          template: {
            name: tpl.name,
            description: tpl.description,
            version: {
              tag: 'initial',
              engine: 'handlebars',
              active: tpl.active,
              template: tpl.html,
              headers: { Subject: tpl.subject },
            },
          },
        },
      };
    }
    return { status: 404, body: { message: 'Not Found' } };
  };
  return startProviderServer(t, route, (seconds) => ({
    status: 429,
    body: { message: 'Too many requests' },
    headers: { 'retry-after': String(seconds) },
  }));
}
