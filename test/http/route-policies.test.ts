import t from 'tap';
import { startTestApp } from '../support/app.ts';

/**
 * The policies every resource declares once (api/route.ts `Resource`): how narrowed credentials
 * may use it, and whether test mode is a partition of its own. Each is stated in the description
 * of every operation, and applied the same way wherever it is declared.
 */

const NOT_FOR_NARROWED = /Not for credentials narrowed to some addresses or domains/;
const READ_WHOLE = /Credentials narrowed to some addresses or domains read it whole/;
const WITHIN_LISTS = /changes only what sits inside its own lists/;
const PARTITIONED = /Partitioned by mode/;

/** One app for the file: one test reads the document it serves, the other a workspace of its own. */
const h = await startTestApp(t);

t.test('the OpenAPI description of each operation states its narrowed-key policy and its mode', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  const operations: { method: string; path: string; tag: string; description: string }[] = [];
  for (const [path, methods] of Object.entries(
    doc.paths as Record<string, Record<string, { tags: string[]; description: string }>>,
  )) {
    for (const [method, op] of Object.entries(methods)) {
      if (method !== 'head')
        operations.push({ method: method.toUpperCase(), path, tag: op.tags[0]!, description: op.description });
    }
  }
  const of = (tag: string) => operations.filter((o) => o.tag === tag);
  for (const tag of ['Contacts', 'Audiences', 'Contact events']) {
    t.ok(of(tag).length > 0, tag);
    for (const o of of(tag)) t.match(o.description, NOT_FOR_NARROWED, `${o.method} ${o.path}`);
  }
  for (const o of of('Suppressions'))
    t.match(o.description, o.method === 'GET' ? READ_WHOLE : NOT_FOR_NARROWED, `${o.method} ${o.path}`);
  for (const o of of('Webhooks'))
    t.match(o.description, o.method === 'GET' ? READ_WHOLE : WITHIN_LISTS, `${o.method} ${o.path}`);
  for (const tag of ['Templates', 'Roles', 'API keys', 'Credential self-description', 'Automations']) {
    for (const o of of(tag)) t.notMatch(o.description, /narrowed to some addresses/, `${o.method} ${o.path}`);
  }
  for (const tag of [
    'Suppressions',
    'Webhooks',
    'Automations',
    'Contact events',
    'Contacts',
    'Audiences',
    'Template mail',
  ]) {
    for (const o of of(tag)) t.match(o.description, PARTITIONED, `${o.method} ${o.path}`);
  }
  for (const tag of ['Templates', 'Roles', 'API keys', 'Credential self-description']) {
    for (const o of of(tag)) t.notMatch(o.description, PARTITIONED, `${o.method} ${o.path}`);
  }
});

t.test(
  'a read-only list refuses a narrowed credential before scope and input are looked at, as a refused one does',
  async (t) => {
    const ws = await h.workspace();
    const narrowed = async (scopes: string[]) => {
      const res = await h.request(ws.apiKey, 'POST', '/keys', { scopes, domainAllowlist: ['example.com'] });
      return res.json().token as string;
    };
    const reader = await narrowed(['settings:read', 'contacts:read']);
    const writer = await narrowed(['settings:read', 'settings:write']);
    const errorOf = (res: { statusCode: number; json: () => any }) => [
      res.statusCode,
      res.json().error.code,
      res.json().error.param,
    ];
    t.same(
      errorOf(await h.request(reader, 'POST', '/suppressions', { email: 'a@example.com' })),
      [422, 'capability_unsupported', null],
      'without the scope',
    );
    t.same(
      errorOf(await h.request(writer, 'POST', '/suppressions', { email: 'not an address' })),
      [422, 'capability_unsupported', null],
      'with a body the schema refuses',
    );
    t.same(
      errorOf(await h.request(writer, 'DELETE', '/suppressions/nope')),
      [422, 'capability_unsupported', null],
      'with an id naming nothing',
    );
    t.same(
      errorOf(await h.request(reader, 'POST', '/contacts', { email: 'a@example.com' })),
      [422, 'capability_unsupported', 'addressAllowlist'],
      'as on a refused resource',
    );
    t.equal((await h.request(writer, 'GET', '/suppressions')).statusCode, 200, 'reads stay open');
    t.same((await h.request(ws.apiKey, 'GET', '/suppressions')).json().data, [], 'nothing was stored');
  },
);
