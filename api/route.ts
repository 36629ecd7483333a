import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z, type ZodType } from 'zod';
import type { Permission } from '../domain/shared/permissions.ts';
import { stepUpRefusal, type Credential } from './credential.ts';
import type { ApiDeps } from './deps.ts';
import { ApiError } from './errors/api-error.ts';
import { answer, IDEMPOTENCY_HEADER_DOC, type AnswerHead } from './idempotency.ts';
import { refuseUnsafeInput } from './input.ts';
import { modeDoc, modeView, type Modes } from './modes.ts';
import { narrowedDoc, narrowedRefusal, type NarrowedPolicy } from './narrowing.ts';
import { fromZod } from './plugins/errors.ts';

declare module 'fastify' {
  interface FastifyRequest {
    credential: Credential | null;
  }
  interface FastifyContextConfig {
    /** false for the few routes that need no credential. */
    auth?: boolean;
  }
}

export interface RouteContext<P, Q, B> {
  request: FastifyRequest;
  /** The status and headers of the answer (api/idempotency.ts stores them with the body). */
  reply: AnswerHead;
  params: P;
  query: Q;
  body: B;
  credential: Credential;
}

/** One operation of a resource: its path, its schemas (the only validation, and its OpenAPI description) and its handler. */
export interface OperationSpec<P, Q, B> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: string;
  summary: string;
  description?: string;
  /** The scope the credential must hold; null when any credential will do. */
  scope: Permission | null;
  params?: ZodType<P>;
  query?: ZodType<Q>;
  body?: ZodType<B>;
  /** Success status and its body schema, for the OpenAPI document. */
  status?: number;
  response?: ZodType;
  /** A sensitive operation: an OAuth token must be step-up elevated (403 `step_up_required`); keys are never asked. */
  stepUp?: boolean;
  /** A write of shared configuration that test keys may call: it changes nothing, or keeps them to test-mode objects itself. */
  openToTestKeys?: boolean;
  /** Fields whose validation problems carry a code of their own instead of `invalid_parameter`. */
  issueCodes?: Record<string, string>;
  /** Bodies larger than the server's default (bytes). */
  bodyLimit?: number;
  /** Extra documented headers on the request (name → description). */
  headers?: Record<string, string>;
  /** `Idempotency-Key` handled by api/idempotency.ts: on by default for POST; false for an operation that keeps its own. */
  idempotency?: boolean;
  handler(ctx: RouteContext<P, Q, B>): Promise<unknown>;
}

export type Operation = OperationSpec<unknown, unknown, unknown>;

/** Types one operation: its handler sees its params, query and body as its schemas parse them. */
export const operation = <P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  spec: OperationSpec<P, Q, B>,
): Operation => spec;

/**
 * A resource of the api (one folder of api/routes/): its OpenAPI tag, its two policies, declared
 * once for all its operations so that an operation added to it cannot forget them, and its
 * operations. The policies are enforced here and stated in each operation's description.
 */
export interface Resource {
  tag: string;
  /** Test mode (api/modes.ts): `partitioned` data of the credential's mode, or configuration both modes `shared`. */
  modes: Modes;
  /** What credentials narrowed to some addresses or domains may do here (api/narrowing.ts). */
  narrowed: NarrowedPolicy;
  operations(deps: ApiDeps): Operation[];
}

/** Registers every operation of a resource: the one way a route of the api is registered. */
export function mount(app: FastifyInstance, deps: ApiDeps, resource: Resource): void {
  for (const spec of resource.operations(deps)) route(app, deps, resource, spec);
}

/**
 * One operation. Its zod schemas are both the only validation and the OpenAPI description:
 * fastify's own validation is switched off (api/server.ts), so there is no second validator to
 * drift. In order: the credential, the narrowed-key policy (before scope and input, so a refusal
 * does not depend on them), the mode, the scope, step-up, the input, then the handler under the
 * Idempotency-Key layer (api/idempotency.ts).
 */
function route(app: FastifyInstance, deps: ApiDeps, resource: Resource, spec: Operation): void {
  const status = spec.status ?? 200;
  const idempotent = spec.idempotency ?? spec.method === 'POST';
  const headers = idempotent ? { 'idempotency-key': IDEMPOTENCY_HEADER_DOC, ...spec.headers } : spec.headers;
  const partitioned = resource.modes === 'partitioned';
  const description = [
    spec.description ?? (spec.scope ? `Scope: \`${spec.scope}\`.` : 'Needs a credential, no scope.'),
    spec.stepUp ? 'OAuth tokens need step-up elevation (403 `step_up_required`); API keys are never asked.' : null,
    narrowedDoc(resource.narrowed, spec.method),
    modeDoc(resource.modes),
  ];
  app.route({
    method: spec.method,
    url: spec.url,
    config: { auth: true },
    ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
    schema: {
      summary: spec.summary,
      description: description.filter((d) => d !== null).join(' '),
      tags: [resource.tag],
      security: [{ bearerAuth: [] }],
      ...(spec.params ? { params: jsonSchema(spec.params) } : {}),
      ...(spec.query ? { querystring: jsonSchema(spec.query) } : {}),
      ...(spec.body ? { body: jsonSchema(spec.body) } : {}),
      ...(headers
        ? {
            headers: {
              type: 'object',
              properties: Object.fromEntries(
                Object.entries(headers).map(([h, d]) => [h, { type: 'string', description: d }]),
              ),
            },
          }
        : {}),
      response: {
        [status]: spec.response
          ? { description: 'Success', ...jsonSchema(spec.response, 'output') }
          : { description: 'Success', type: 'null' },
      },
    },
    handler: async (request, reply) => {
      if (!request.credential) throw new ApiError('missing_api_key', 'Send a key as `Authorization: Bearer <key>`.');
      const narrowed = narrowedRefusal(resource.narrowed, spec.method, request.credential);
      if (narrowed) throw narrowed;
      const credential = modeView(request.credential, partitioned, spec);
      if (spec.scope && !credential.scopes.includes(spec.scope)) {
        throw new ApiError('insufficient_scope', `This operation needs the \`${spec.scope}\` scope.`, null);
      }
      if (spec.stepUp) {
        const refusal = stepUpRefusal(credential, Date.now());
        if (refusal) throw new ApiError('step_up_required', refusal, null, 403);
      }
      // Every route's input passes here before its schema sees it: the strings PostgreSQL cannot
      // store, and nesting deep enough to exhaust a recursive walk, are refused once for all.
      refuseUnsafeInput('path', request.params);
      refuseUnsafeInput('query', request.query);
      refuseUnsafeInput('body', request.body);
      const params = parse(spec.params, request.params ?? {});
      if (!spec.query) noFields(request.query);
      const query = parse(spec.query, request.query ?? {});
      const body = spec.body ? parse(spec.body, request.body ?? {}, spec.issueCodes) : noFields(request.body);
      return answer(deps.idempotencyKeys, { request, reply, credential, status, idempotent }, (head) =>
        spec.handler({ request, reply: head, params, query, body, credential }),
      );
    },
  });
}

function parse<T>(schema: ZodType<T> | undefined, input: unknown, codes?: Record<string, string>): T {
  if (!schema) return {} as T;
  const result = schema.safeParse(input);
  if (!result.success) throw fromZod(result.error.issues, codes);
  return result.data;
}

/** The query string or body of an operation that declares none must be empty, as strict as a declared one. */
function noFields(input: unknown): undefined {
  if (input && typeof input === 'object' && !Array.isArray(input)) {
    const first = Object.keys(input)[0];
    if (first !== undefined)
      throw new ApiError('unknown_parameter', `\`${first}\` is not a parameter of this operation.`, first, 422);
  }
  return undefined;
}

export function jsonSchema(schema: ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<
    string,
    unknown
  >;
  return rest;
}
