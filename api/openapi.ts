import { z, type ZodType } from 'zod';
import type { OpenApiDocument } from './docs.ts';
import { errorEnvelope } from './errors/api-error.ts';
import { CATALOGUE, TYPE_BY_STATUS, type ErrorCode } from './errors/catalogue.ts';
import type { MountedOperation, Resource } from './route.ts';

// biome-ignore lint/suspicious/noExplicitAny: JSON Schema and OpenAPI objects are walked and built generically here; their shape is checked by the Redocly lint test, not by types.
type Json = Record<string, any>;
type Io = 'input' | 'output';

const SCHEMAS = '#/components/schemas/';
const DEFS = '#/$defs/';

/**
 * The OpenAPI 3.1 document, built from the operations `mount` registered (api/route.ts): their zod
 * schemas, operation ids, tags and error codes. It is a function of the code alone, so it is built
 * once per process; only `servers` depends on the request (api/docs.ts).
 */
export function openApiDocument(
  resources: readonly Resource[],
  operations: readonly MountedOperation[],
): OpenApiDocument & Json {
  const schemas = new SchemaSet();
  const errorRef = schemas.convert(errorEnvelope, 'output');
  const paths: Record<string, Record<string, Json>> = {};
  for (const { resource, spec, description, headers, errors } of operations) {
    const path = spec.url.replace(/:(\w+)/g, '{$1}');
    const parameters = [
      ...(spec.params ? parametersOf(schemas, spec.params, 'path') : []),
      ...(spec.query ? parametersOf(schemas, spec.query, 'query') : []),
      ...Object.entries(headers).map(([name, about]) => ({
        name,
        in: 'header',
        required: false,
        description: about,
        schema: { type: 'string' },
      })),
    ];
    const status = spec.status ?? 200;
    const pathItem = paths[path] ?? {};
    paths[path] = pathItem;
    pathItem[spec.method.toLowerCase()] = {
      operationId: spec.operationId,
      summary: spec.summary,
      description,
      tags: [resource.tag],
      security: spec.open === 'anyone' ? [] : [{ [spec.open ?? 'bearerAuth']: [] }],
      ...(parameters.length > 0 ? { parameters } : {}),
      ...(spec.rawBody
        ? {
            requestBody: {
              required: true,
              content: { '*/*': { schema: { type: 'string', format: 'binary' } } },
            },
          }
        : {}),
      ...(spec.body
        ? {
            requestBody: {
              // A body whose every field is optional may be left out.
              required: !spec.body.safeParse({}).success,
              content: { 'application/json': { schema: schemas.convert(spec.body, 'input') } },
            },
          }
        : {}),
      responses: {
        [status]: spec.response
          ? {
              description: spec.summary,
              content: { 'application/json': { schema: schemas.convert(spec.response, 'output') } },
            }
          : spec.produces
            ? {
                description: spec.summary,
                content: { [spec.produces]: { schema: { type: 'string', format: 'binary' } } },
              }
            : { description: spec.summary },
        ...errorResponses(errors, errorRef),
      },
    };
  }
  const tags = [...new Map(resources.map((r) => [r.tag, { name: r.tag, description: r.description }])).values()];
  return {
    openapi: '3.1.0',
    info: { title: 'Workspace Mail Service', version: '0.1.0' },
    tags,
    paths,
    components: {
      schemas: schemas.components(),
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'An API key: `wms_live_…` or `wms_test_…`.' },
        tempInboxToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'A disposable inbox’s access token (`wms_tmp_…`), handed out once when it was made.',
        },
      },
    },
  };
}

/**
 * Per status, the codes an operation may answer with: the envelope once in components, each
 * status narrowing `code` to its codes and `type` to the status's, both read from the catalogue
 * that /docs/errors renders, so the two cannot disagree.
 */
function errorResponses(codes: readonly ErrorCode[], envelope: Json): Record<string, Json> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = CATALOGUE[code][0];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, Json> = {};
  for (const status of [...byStatus.keys()].sort((a, b) => a - b)) {
    const listed = byStatus.get(status)!.sort();
    out[status] = {
      description: `${listed.map((c) => `\`${c}\``).join(', ')}: see /docs/errors.`,
      ...(status === 429 || status === 503
        ? {
            headers: {
              'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer' } },
            },
          }
        : {}),
      content: {
        'application/json': {
          schema: {
            allOf: [
              envelope,
              {
                type: 'object',
                properties: {
                  error: {
                    type: 'object',
                    properties: {
                      type: { type: 'string', const: TYPE_BY_STATUS[status] },
                      code: { type: 'string', enum: listed },
                    },
                  },
                },
              },
            ],
          },
        },
      },
    };
  }
  return out;
}

/** One parameter per property of an object schema; a description moves up to the parameter. */
function parametersOf(schemas: SchemaSet, schema: ZodType, where: 'path' | 'query'): Json[] {
  const json = schemas.convert(schema, 'input');
  if (json.type !== 'object' || !json.properties) throw new Error(`${where} parameters must be an object schema`);
  const required = new Set<string>(json.required ?? []);
  return Object.entries<Json>(json.properties).map(([name, { description, ...property }]) => ({
    name,
    in: where,
    required: where === 'path' || required.has(name),
    ...(description ? { description } : {}),
    schema: property,
  }));
}

/**
 * The JSON schemas of a document. zod writes each schema on its own, with the named ones (a
 * `.meta({ id })`, which every recursive schema needs) under its `$defs`; here they become
 * components and the refs point there. A named schema whose input shape (what a request may send:
 * defaults optional) differs from its output shape (what an answer holds) gets two components,
 * `<id>` and `<id>Input`.
 */
class SchemaSet {
  /** Raw `$defs` entries by name, as JSON text per direction. */
  private readonly defs = new Map<string, Partial<Record<Io, string>>>();
  /** Converted schemas whose refs still point at `$defs`, rewritten by `components()`. */
  private readonly pending: { json: Json; io: Io }[] = [];

  convert(schema: ZodType, io: Io): Json {
    const { $schema: _dialect, $defs, ...root } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Json;
    for (const [name, def] of Object.entries<Json>($defs ?? {})) {
      if (/^__schema\d+$/.test(name))
        throw new Error(`A recursive schema has no name: give it .meta({ id }) (${JSON.stringify(def).slice(0, 200)})`);
      const text = JSON.stringify(def);
      const seen = this.defs.get(name) ?? {};
      if (seen[io] !== undefined && seen[io] !== text) throw new Error(`Two different schemas are named ${name}`);
      this.defs.set(name, { ...seen, [io]: text });
    }
    const json = structuredClone(root);
    this.pending.push({ json, io });
    return json;
  }

  /** Every named schema under its component name, and every converted schema's refs pointing there. */
  components(): Record<string, Json> {
    // A def's input and output differ when their texts do, or when one refers to a def that does.
    const differs = new Set<string>();
    for (let grew = true; grew; ) {
      grew = false;
      for (const [name, texts] of this.defs) {
        if (differs.has(name)) continue;
        const both = texts.input !== undefined && texts.output !== undefined;
        const refersToDiffering = [texts.input, texts.output].some((t) =>
          [...(t ?? '').matchAll(/"#\/\$defs\/([^"]+)"/g)].some((m) => differs.has(m[1]!)),
        );
        if ((both && texts.input !== texts.output) || (both && refersToDiffering)) {
          differs.add(name);
          grew = true;
        }
      }
    }
    const nameOf = (def: string, io: Io) => (io === 'input' && differs.has(def) ? `${def}Input` : def);
    const out: Record<string, Json> = {};
    for (const [name, texts] of this.defs) {
      for (const io of ['output', 'input'] as const) {
        const text = texts[io];
        if (text !== undefined) out[nameOf(name, io)] = rewriteRefs(JSON.parse(text), (def) => nameOf(def, io));
      }
    }
    for (const { json, io } of this.pending.splice(0)) rewriteRefs(json, (def) => nameOf(def, io));
    return Object.fromEntries(Object.entries(out).sort(([a], [b]) => a.localeCompare(b)));
  }
}

/** Points every `#/$defs/<name>` ref in `json` (in place) at its component. */
function rewriteRefs(json: Json, nameOf: (def: string) => string): Json {
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const o = node as Json;
      if (typeof o.$ref === 'string' && o.$ref.startsWith(DEFS)) o.$ref = SCHEMAS + nameOf(o.$ref.slice(DEFS.length));
      for (const value of Object.values(o)) walk(value);
    }
  };
  walk(json);
  return json;
}
