import path from 'node:path';
import { lintFromString, loadConfig } from '@redocly/openapi-core';
import t from 'tap';
import { z } from 'zod';
import { openApiDocument } from '../../api/openapi.ts';
import { CATALOGUE, TYPE_BY_STATUS, isErrorCode } from '../../api/errors/catalogue.ts';
import { mount, operation, type Resource } from '../../api/route.ts';
import Fastify from 'fastify';
import { startTestApp } from '../support/app.ts';
import { ROOT } from '../support/paths.ts';

type Json = Record<string, any>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete'];

/** Every operation of the document with its path and method. */
const operationsOf = (doc: Json) =>
  Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
    Object.entries<Json>(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ label: `${method.toUpperCase()} ${path}`, op })),
  );

/** Every `$ref` in the document. */
function refsOf(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) refsOf(n, out);
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') out.push(value);
      else refsOf(value, out);
    }
  }
  return out;
}

/** One app for the file: the tests read the document it serves and change nothing. */
const h = await startTestApp(t);

t.test('GET /openapi.json from a server on a real socket passes Redocly recommended rules', async (t) => {
  const base = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const response = await fetch(`${base}/openapi.json`);
  t.equal(response.status, 200);
  const source = await response.text();
  const doc = JSON.parse(source);
  t.equal(doc.openapi, '3.1.0');
  t.same(doc.servers, [{ url: base, description: 'This server' }], 'servers names the address it was fetched from');

  // redocly.yaml: the recommended rules, with what is turned off and why written there.
  const config = await loadConfig({ configPath: path.join(ROOT, 'redocly.yaml') });
  const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
  const found = problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`);
  t.same(found, [], 'no errors and no warnings');
});

t.test('every operation: an operationId, a declared tag, its error answers from the catalogue', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  const operations = operationsOf(doc);
  t.ok(operations.length >= 70, `${operations.length} operations`);
  const tags = new Set(doc.tags.map((tag: Json) => tag.name));
  const ids = new Set<string>();
  for (const { label, op } of operations) {
    t.match(op.operationId, /^[a-z][a-zA-Z]+$/, `${label}: a camelCase operationId`);
    t.notOk(ids.has(op.operationId), `${label}: operationId ${op.operationId} is unique`);
    ids.add(op.operationId);
    t.ok(op.tags?.length > 0 && op.tags.every((tag: string) => tags.has(tag)), `${label}: tagged with a declared tag`);
    const statuses = Object.keys(op.responses).map(Number);
    t.ok(
      statuses.some((s) => s >= 400 && s < 500),
      `${label}: documents a 4xx`,
    );
    for (const status of statuses.filter((s) => s >= 400)) {
      const schema = op.responses[status].content['application/json'].schema;
      t.equal(schema.allOf[0].$ref, '#/components/schemas/Error', `${label} ${status}: the one envelope`);
      const { code, type } = schema.allOf[1].properties.error.properties;
      t.equal(type.const, TYPE_BY_STATUS[status], `${label} ${status}: its type`);
      for (const c of code.enum) {
        t.ok(isErrorCode(c) && CATALOGUE[c][0] === status, `${label}: ${c} is in the catalogue under ${status}`);
      }
    }
  }
  // Some whose codes the brief names.
  const byId = new Map(operations.map(({ op }) => [op.operationId, op]));
  for (const id of ['createTemplate', 'listSuppressions', 'replayWebhookDelivery']) t.ok(byId.has(id), id);
  const codes = (id: string, status: number) =>
    byId.get(id)!.responses[status].content['application/json'].schema.allOf[1].properties.error.properties.code.enum;
  t.ok(codes('createTemplate', 409).includes('template_name_taken'));
  t.ok(codes('createTemplate', 422).includes('invalid_template'));
  t.ok(codes('listSuppressions', 400).includes('invalid_cursor'));
  t.ok(codes('deleteSuppression', 409).includes('suppression_not_removable'));
  t.ok(codes('replayWebhookDelivery', 409).includes('webhook_disabled'));
  t.ok(codes('updateWebhook', 403).includes('step_up_required'));
  t.ok(codes('rotateCurrentKey', 403).includes('api_key_only'));
});

t.test('recursive and shared schemas are components, and every $ref resolves', async (t) => {
  const doc = (await h.request(null, 'GET', '/openapi.json')).json();
  const schemas = doc.components.schemas;
  for (const name of ['Error', 'TemplateBlock', 'AutomationStep']) t.ok(schemas[name], `${name} is a component`);
  const refs = refsOf(doc);
  t.ok(refs.length > 0);
  for (const ref of new Set(refs)) {
    t.match(ref, /^#\/components\/schemas\/[A-Za-z0-9._-]+$/, `${ref} points into components`);
    t.ok(schemas[ref.slice('#/components/schemas/'.length)], `${ref} resolves`);
  }
  t.notMatch(JSON.stringify(doc), /\$defs|__schema/, 'no $defs left in operations');
  const body = doc.paths['/templates'].post.requestBody.content['application/json'].schema;
  t.ok(
    refsOf(body).some((r) => r.startsWith('#/components/schemas/TemplateBlock')),
    'a template body refers to the block',
  );
});

t.test('the generator: names, input and output shapes, and what it refuses', async (t) => {
  const Node: z.ZodType<{ label: string; size: number; children: unknown[] }> = z
    .lazy(() => z.strictObject({ label: z.string(), size: z.number().default(1), children: z.array(Node).default([]) }))
    .meta({ id: 'Node' });
  const build = (node: z.ZodType, operationId = 'createNode') => {
    const app = Fastify();
    const resource: Resource = {
      tag: 'Nodes',
      description: 'Trees.',
      modes: 'shared',
      narrowed: 'open',
      operations: () => [
        operation({
          method: 'POST',
          url: '/nodes/:id',
          operationId,
          summary: 'Make a node',
          scope: null,
          params: z.object({ id: z.string() }),
          body: z.strictObject({ root: node }),
          response: z.object({ root: node }),
          errors: ['resource_not_found'],
          handler: async () => ({}),
        }),
      ],
    };
    return openApiDocument([resource], mount(app, {} as never, resource));
  };
  const doc = build(Node);
  const op = doc.paths['/nodes/{id}'].post;
  t.equal(op.operationId, 'createNode');
  t.same(op.tags, ['Nodes']);
  t.same(doc.tags, [{ name: 'Nodes', description: 'Trees.' }]);
  t.same(op.parameters, [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }, op.parameters[1]]);
  t.equal(op.parameters[1].name, 'idempotency-key', 'a POST documents its Idempotency-Key');
  t.same(op.requestBody.content['application/json'].schema.properties.root, { $ref: '#/components/schemas/NodeInput' });
  t.same(op.responses[200].content['application/json'].schema.properties.root, { $ref: '#/components/schemas/Node' });
  t.same(doc.components.schemas.Node.properties.children.items, { $ref: '#/components/schemas/Node' });
  t.same(doc.components.schemas.NodeInput.properties.children.items, { $ref: '#/components/schemas/NodeInput' });
  t.same(doc.components.schemas.Node.required, ['label', 'size', 'children'], 'an answer holds the defaults');
  t.same(doc.components.schemas.NodeInput.required, ['label'], 'a request may leave them out');
  t.ok(op.responses[404], 'a declared code is documented under its status');
  t.ok(op.responses[401] && op.responses[429] && op.responses[503], 'and those every operation may answer');

  const Unnamed: z.ZodType<unknown[]> = z.lazy(() => z.array(Unnamed));
  t.throws(() => build(Unnamed), /recursive schema has no name/, 'a recursive schema without an id is refused');
});
