import t from 'tap';
import { NESTING_MAX } from '../../api/input.ts';
import { createContact } from '../../commands/contacts/handlers.ts';
import { startTestApp, type TestApp } from '../support/app.ts';

/**
 * Input no route may answer with a 500, checked across every operation the OpenAPI document
 * lists, so an operation added later is covered without touching this file: strings PostgreSQL
 * cannot store in every path parameter, query parameter, header parameter and body field (and
 * field name, where a body takes names of its own), nesting past the limit in every body, and
 * instants PostgreSQL cannot take in every date-time input.
 */

type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
type Path = (string | number)[];
type Schema = Record<string, any>;
interface Operation {
  method: Method;
  path: string;
  parameters: { in: 'path' | 'query' | 'header'; name: string; schema?: Schema }[];
  body: Schema | null;
  /** The operation refuses every API key before reading input (the step-up operations). */
  keysRefused: boolean;
}

/** Strings PostgreSQL cannot store: NUL, a lone high and a lone low surrogate, a reversed pair. */
const UNSTORABLE = ['nul \u0000 here', 'lone high \ud800', 'lone low \udc00 x', 'reversed \udc00\ud800'];
/** Instants that passed the date-time format and broke the database or Date#toISOString. */
const UNREPRESENTABLE = [
  '0000-01-01T00:00:00Z',
  '0000-06-15T12:00:00+02:00',
  '0001-01-01T00:30:00+01:00',
  '9999-12-31T23:00:00-02:00',
];

function operations(doc: Schema): Operation[] {
  const out: Operation[] = [];
  for (const [path, ops] of Object.entries<Record<string, Schema>>(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      out.push({
        method: method.toUpperCase() as Method,
        path,
        parameters: op.parameters ?? [],
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
        keysRefused: (
          op.responses?.['400']?.content?.['application/json']?.schema?.allOf?.[1]?.properties?.error?.properties?.code
            ?.enum ?? []
        ).includes('step_up_not_applicable'),
      });
    }
  }
  return out;
}

/** The schema a local `$ref` (`#/components/schemas/TemplateBlock`) points at in the document. */
const resolved = (doc: Schema, ref: string): Schema =>
  ref
    .slice(2)
    .split('/')
    .reduce((node, key) => node[key.replace(/~1/g, '/').replace(/~0/g, '~')], doc);

/**
 * Every place a value can go in a body schema: each property, each array's items (index 0), and a
 * made-up name where an object takes names of its own. A `$ref` (into the document's components)
 * is followed once along a path.
 */
function fieldPaths(
  schema: Schema,
  doc: Schema,
  path: Path = [],
  seen: Set<string> = new Set(),
): { path: Path; schema: Schema }[] {
  if (schema.$ref) {
    if (seen.has(schema.$ref)) return [];
    return fieldPaths(resolved(doc, schema.$ref), doc, path, new Set([...seen, schema.$ref]));
  }
  const out: { path: Path; schema: Schema }[] = path.length > 0 ? [{ path, schema }] : [];
  for (const variant of [...(schema.anyOf ?? []), ...(schema.oneOf ?? []), ...(schema.allOf ?? [])])
    out.push(...fieldPaths(variant, doc, path, seen));
  for (const [name, property] of Object.entries<Schema>(schema.properties ?? {}))
    out.push(...fieldPaths(property, doc, [...path, name], seen));
  if (schema.items) out.push(...fieldPaths(schema.items, doc, [...path, 0], seen));
  if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
    out.push(...fieldPaths(schema.additionalProperties, doc, [...path, 'someName'], seen));
  }
  // The first entry of a path is its whole schema (a nullable field's `anyOf` included).
  const unique = new Map<string, { path: Path; schema: Schema }>();
  for (const f of out) if (!unique.has(f.path.join('.'))) unique.set(f.path.join('.'), f);
  return [...unique.values()];
}

/** The value placed at `path` inside the containers the path names. */
function placed(path: Path, value: unknown): unknown {
  let node = value;
  for (let i = path.length - 1; i >= 0; i--) {
    const key = path[i]!;
    node = typeof key === 'number' ? [node] : { [key]: node };
  }
  return node;
}

/** A body whose field holds `levels` arrays, one in the other, as JSON text (too deep for JSON.stringify). */
const nested = (field: string, levels: number) =>
  `{${JSON.stringify(field)}:${'['.repeat(levels)}"deepest"${']'.repeat(levels)}}`;

const isDateTime = (schema: Schema | undefined): boolean =>
  schema?.format === 'date-time' || [...(schema?.anyOf ?? []), ...(schema?.oneOf ?? [])].some(isDateTime);

const filled = (path: string, values: Record<string, string>) =>
  path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(values[name] ?? 'x1'));

/**
 * One app for the file: each test makes workspaces of its own, and what it reads back (a key's
 * request log, a workspace's contacts) is of its own workspace or key.
 */
const h = await startTestApp(t);

t.test('input no schema should see is refused at the edge of every operation', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  const ops = operations(doc);
  t.ok(ops.length >= 70, `${ops.length} operations listed`);
  // Several hundred requests: spread over workspaces so no key reaches its 600 a minute.
  const owners = await Promise.all(Array.from({ length: 12 }, () => h.workspace()));
  let turn = 0;
  const send = (method: Method, url: string, body?: unknown, headers?: Record<string, string>) =>
    h.request(owners[turn++ % owners.length]!.apiKey, method, url, body, headers);
  const expectRefused = async (
    label: string,
    res: Awaited<ReturnType<TestApp['request']>>,
    status: number,
    code: string,
    param: string | null,
  ): Promise<void> => {
    const error = res.json().error;
    if (res.statusCode !== status || error?.code !== code || error?.param !== param) {
      t.fail(label, { found: [res.statusCode, error?.code, error?.param], wanted: [status, code, param] });
    } else t.pass(label);
  };

  for (const op of ops) {
    const pathParams = op.parameters.filter((p) => p.in === 'path').map((p) => p.name);
    const url = filled(op.path, {});
    if (op.keysRefused) {
      // A key never gets as far as the input here (an OAuth token's body takes the same parse as all).
      const res = await send(op.method, url, op.body ? nested('x', 100_000) : undefined);
      await expectRefused(
        `${op.method} ${op.path}: an API key, whatever it sends`,
        res,
        400,
        'step_up_not_applicable',
        null,
      );
      continue;
    }
    for (const name of pathParams) {
      const res = await send(op.method, filled(op.path, { [name]: UNSTORABLE[0]! }));
      await expectRefused(`${op.method} ${op.path}: NUL in path parameter ${name}`, res, 400, 'invalid_request', name);
    }
    for (const p of op.parameters.filter((p) => p.in === 'query')) {
      const res = await send(op.method, `${url}?${p.name}=${encodeURIComponent(UNSTORABLE[0]!)}`);
      await expectRefused(
        `${op.method} ${op.path}: NUL in query parameter ${p.name}`,
        res,
        422,
        'invalid_parameter',
        p.name,
      );
    }
    for (const p of op.parameters.filter((p) => p.in === 'header')) {
      for (const bad of UNSTORABLE) {
        const res = await send(op.method, url, op.body ? {} : undefined, { [p.name]: bad });
        await expectRefused(
          `${op.method} ${op.path}: ${JSON.stringify(bad)} in header ${p.name}`,
          res,
          400,
          'invalid_request',
          p.name,
        );
      }
    }
    if (!op.body) continue;
    const fields = fieldPaths(op.body, doc);
    for (const [i, field] of fields.entries()) {
      // Every field gets one of the strings in turn; the first fields (the top level) get them all.
      const strings = field.path.length === 1 ? UNSTORABLE : [UNSTORABLE[i % UNSTORABLE.length]!];
      for (const bad of strings) {
        const res = await send(op.method, url, placed(field.path, bad));
        await expectRefused(
          `${op.method} ${op.path}: ${JSON.stringify(bad)} in ${field.path.join('.')}`,
          res,
          422,
          'invalid_parameter',
          field.path.join('.'),
        );
      }
      if (field.path.at(-1) === 'someName') {
        const named = [...field.path.slice(0, -1), `name ${UNSTORABLE[i % UNSTORABLE.length]}`];
        const res = await send(op.method, url, placed(named, 'fine'));
        await expectRefused(
          `${op.method} ${op.path}: an unstorable field name in ${named.slice(0, -1).join('.')}`,
          res,
          422,
          'invalid_parameter',
          named.join('.'),
        );
      }
    }
    const top = fields.find((f) => f.path.length === 1)!.path[0]!;
    const deep = await send(op.method, url, nested(String(top), 100_000));
    // The root object is level 1 and `top`'s array level 2: the first container past the limit is reached through NESTING_MAX - 1 indexes.
    const at = [top, ...Array.from({ length: NESTING_MAX - 1 }, () => 0)].join('.');
    await expectRefused(`${op.method} ${op.path}: ${top} nested 100,000 levels`, deep, 422, 'invalid_parameter', at);
    const atLimit = await send(op.method, url, nested(String(top), NESTING_MAX - 1));
    t.not(atLimit.statusCode, 500, `${op.method} ${op.path}: ${top} nested to the limit is no 500`);
    t.notMatch(atLimit.json().error?.message ?? '', /nests deeper/, 'and not refused for its nesting');
  }
});

t.test(
  'every date-time input refuses an instant PostgreSQL or Date#toISOString cannot take: 422 naming it',
  async (t) => {
    const ws = await h.workspace();
    const doc = (await h.request(null, 'GET', '/openapi.json')).json();
    const ops = operations(doc);
    // The rest of a valid body, where an operation needs more than the date-time field.
    const bodies: Record<string, Record<string, unknown>> = { 'POST /keys': { scopes: [] } };
    const found: string[] = [];
    for (const op of ops) {
      const url = filled(op.path, {});
      const inQuery = op.parameters.filter((p) => p.in === 'query' && isDateTime(p.schema)).map((p) => p.name);
      const inBody = op.body
        ? fieldPaths(op.body, doc)
            .filter((f) => isDateTime(f.schema))
            .map((f) => f.path)
        : [];
      for (const name of inQuery) {
        found.push(`${op.method} ${op.path} ?${name}`);
        for (const instant of UNREPRESENTABLE) {
          const res = await h.request(ws.apiKey, op.method, `${url}?${name}=${encodeURIComponent(instant)}`);
          t.same(
            [res.statusCode, res.json().error?.code, res.json().error?.param],
            [422, 'invalid_parameter', name],
            `${op.method} ${op.path} ?${name}=${instant}`,
          );
        }
        const fine = await h.request(
          ws.apiKey,
          op.method,
          `${url}?${name}=${encodeURIComponent('0001-01-01T00:00:00Z')}`,
        );
        t.not(
          fine.json().error?.param,
          name,
          `${op.method} ${op.path} ?${name}: the first instant PostgreSQL takes passes`,
        );
      }
      for (const path of inBody) {
        found.push(`${op.method} ${op.path} ${path.join('.')}`);
        for (const instant of UNREPRESENTABLE) {
          const body = { ...bodies[`${op.method} ${op.path}`], ...(placed(path, instant) as object) };
          const res = await h.request(ws.apiKey, op.method, url, body);
          t.same(
            [res.statusCode, res.json().error?.code, res.json().error?.param],
            [422, 'invalid_parameter', path.join('.')],
            `${op.method} ${op.path} ${path.join('.')}: ${instant}`,
          );
        }
      }
    }
    t.same(
      found.sort(),
      [
        'GET /keys/self/requests ?since',
        'GET /keys/self/requests ?until',
        'GET /webhooks/{id}/stats ?since',
        'POST /keys expiresAt',
        'POST /rules/test at',
        'POST /webhooks/{id}/replay since',
      ],
      'every date-time input the document lists was tried',
    );
    const late = await h.request(ws.apiKey, 'POST', '/keys', { scopes: [], expiresAt: '9999-12-31T22:59:59-01:00' });
    t.equal(late.statusCode, 201, 'the last instant of year 9999 in UTC is taken');
    t.equal(late.json().expiresAt, '9999-12-31T23:59:59.000Z');
    const event = await h.request(ws.apiKey, 'POST', '/events', {
      name: 'signed_up',
      email: 'year0@example.com',
      createContact: true,
      occurredAt: '0000-01-01T00:00:00Z',
    });
    t.same(
      [event.statusCode, event.json().error.code, event.json().error.param],
      [422, 'invalid_event', 'occurredAt'],
      "an event's occurredAt in year 0 is refused by its own rule",
    );
  },
);

t.test('nesting that overflowed the stack is refused at the edge, naming the field', async (t) => {
  const ws = await h.workspace();
  const branches = (levels: number) => {
    let steps = '[{"type":"wait","minutes":1}]';
    for (let i = 0; i < levels; i++) steps = `[{"type":"branch","ifEvent":"x","then":${steps},"else":[]}]`;
    return steps;
  };
  const deepJson = (levels: number) => `${'{"a":'.repeat(levels)}1${'}'.repeat(levels)}`;
  const blocks = (levels: number) =>
    `${'{"kind":"Container","children":['.repeat(levels)}{"kind":"Hr"}${']}'.repeat(levels)}`;
  const cases: [string, string, string, string][] = [
    [
      'automation steps',
      '/automations',
      `{"name":"deep","trigger":{"event":"x"},"steps":${branches(20_000)}}`,
      'steps.0.then.0',
    ],
    [
      'step data',
      '/automations',
      `{"name":"deep","trigger":{"event":"x"},"steps":[{"type":"send","template":"t","data":${deepJson(50_000)}}]}`,
      'steps.0.data.a.a',
    ],
    [
      'event properties',
      '/events',
      `{"name":"deep","email":"deep@example.com","properties":${deepJson(50_000)}}`,
      'properties.a.a',
    ],
    [
      'batch event properties',
      '/events/batch',
      `{"events":[{"name":"deep","email":"deep@example.com","properties":${deepJson(50_000)}}]}`,
      'events.0.properties.a',
    ],
    [
      'template document',
      '/templates',
      `{"name":"deep","document":{"body":[${blocks(20_000)}]}}`,
      'document.body.0.children.0',
    ],
  ];
  for (const [label, url, body, prefix] of cases) {
    const res = await h.request(ws.apiKey, 'POST', url, body);
    t.equal(res.statusCode, 422, label);
    t.equal(res.json().error.code, 'invalid_parameter', label);
    t.ok(res.json().error.param.startsWith(prefix), `${label}: param ${String(res.json().error.param).slice(0, 60)}…`);
    t.equal(
      res.json().error.param.split('.').length,
      NESTING_MAX,
      `${label}: the path to the first container past the limit`,
    );
  }
  const fine = await h.request(
    ws.apiKey,
    'POST',
    '/events',
    `{"name":"deep","email":"deep@example.com","createContact":true,"properties":${deepJson(NESTING_MAX - 1)}}`,
  );
  t.equal(fine.statusCode, 201, 'properties nested to the limit are stored');
});

t.test("one workspace's unstorable string fails its own write alone, also when writes share an append", async (t) => {
  const workspaces = await Promise.all(Array.from({ length: 24 }, () => h.workspace()));
  for (let round = 0; round < 3; round++) {
    const bad = (round * 7) % workspaces.length;
    const answers = await Promise.all(
      workspaces.map((ws, i) =>
        h.request(ws.apiKey, 'POST', '/contacts', {
          email: `r${round}-w${i}@example.com`,
          name: i === bad ? 'Ada \u0000 Lovelace' : 'Ada Lovelace',
        }),
      ),
    );
    t.same(
      answers.map((a) => a.statusCode),
      workspaces.map((_, i) => (i === bad ? 422 : 201)),
      `round ${round}: only workspace ${bad} refused`,
    );
    t.match(answers[bad]!.json().error, { code: 'invalid_parameter', param: 'name' });
  }
  // Past the edge (a command the API did not check), the event store keeps the failure to its own append.
  const commands = await Promise.allSettled(
    workspaces.map((ws, i) =>
      createContact(
        h.system.commands,
        { workspaceId: ws.workspaceId, kind: 'system', id: null },
        { email: `cmd-w${i}@example.com`, name: i === 5 ? 'nul \u0000' : 'fine', source: 'manual' },
        new Date().toISOString(),
      ),
    ),
  );
  t.same(
    commands.map((c) => c.status),
    workspaces.map((_, i) => (i === 5 ? 'rejected' : 'fulfilled')),
    'only the command holding NUL failed',
  );
});

t.test('headers: an unstorable User-Agent is refused and logged without breaking the log', async (t) => {
  const ws = await h.workspace();
  const refused = await h.request(ws.apiKey, 'GET', '/ping', undefined, { 'user-agent': 'agent \u0000 \ud800' });
  t.same(
    [refused.statusCode, refused.json().error.code, refused.json().error.param],
    [400, 'invalid_request', 'user-agent'],
  );
  t.equal((await h.request(ws.apiKey, 'GET', '/ping', undefined, { 'user-agent': 'plain agent' })).statusCode, 200);
  const log = (await h.request(ws.apiKey, 'GET', '/keys/self/requests')).json().data as {
    status: number;
    userAgent: string;
  }[];
  t.match(
    log,
    [
      { status: 200, userAgent: 'plain agent' },
      { status: 400, userAgent: 'agent \ufffd \ufffd' },
    ],
    'both in the log: the refused one with its unstorable characters replaced',
  );
});
