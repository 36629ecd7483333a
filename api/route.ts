import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { ZodType } from 'zod';
import type { Permission } from '../domain/shared/permissions.ts';
import { stepUpRefusal, type Credential } from './credential.ts';
import type { ApiDeps } from './deps.ts';
import { ApiError } from './errors/api-error.ts';
import type { ErrorCode } from './errors/catalogue.ts';
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
    /** The operation's own 500 (`Operation.failure`), answered in place of `internal_error`. */
    failure?: ErrorCode;
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
  /**
   * The OpenAPI operationId, which generated clients name their methods by: a camelCase verb and
   * noun for what it does (`createTemplate`, `listSuppressions`, `replayWebhookDelivery`), unique
   * in the api. Stable: renaming one breaks every client generated from the document.
   */
  operationId: string;
  summary: string;
  description?: string;
  /** The scope the credential must hold (every one of a list); null when any credential will do. */
  scope: Permission | readonly Permission[] | null;
  params?: ZodType<P>;
  query?: ZodType<Q>;
  body?: ZodType<B>;
  /** Success status and its body schema, for the OpenAPI document. */
  status?: number;
  response?: ZodType;
  /** A body that is not JSON (a download): its media type, for the OpenAPI document. */
  produces?: string;
  /**
   * The request body is the bytes themselves (an upload), of any media type: the handler's `body`
   * is a Buffer (empty when none was sent). Past `maxBytes` the operation answers `tooLarge` (413)
   * before reading further.
   */
  rawBody?: {
    maxBytes: number;
    tooLarge: ErrorCode;
    /**
     * The body is handed over unread, as a stream (an upload too large to hold): the handler reads
     * it and enforces `maxBytes` past a declared Content-Length, which is refused here before any byte.
     */
    stream?: boolean;
  };
  /** A sensitive operation: an OAuth token must be step-up elevated (403 `step_up_required`); keys are never asked. */
  stepUp?: boolean;
  /**
   * Which credentials the operation serves at all, checked with the others, before the input is
   * read: throws the refusal (the step-up operations answer an API key `step_up_not_applicable`,
   * whatever its body).
   */
  admit?(credential: Credential): void;
  /** A write of shared configuration that test keys may call: it changes nothing, or keeps them to test-mode objects itself. */
  openToTestKeys?: boolean;
  /**
   * The codes this operation's handler answers with (its lookups' 404s, its decider's refusals),
   * from api/errors/catalogue.ts. Those the route itself may answer (credential, rate limit,
   * scope, step-up, the resource's policies, input, Idempotency-Key, cursors) are added by
   * `errorCodes`; together they are the error answers the OpenAPI document lists.
   */
  errors?: ErrorCode[];
  /**
   * The spec's own 500 for a fault inside this operation (`thread_update_failed`): answered in
   * place of `internal_error`, so a client can tell which change failed. The fault is logged as any.
   */
  failure?: ErrorCode;
  /** Fields whose validation problems carry a code of their own instead of `invalid_parameter`. */
  issueCodes?: Record<string, ErrorCode>;
  /** Bodies larger than the server's default (bytes). */
  bodyLimit?: number;
  /** Extra documented headers on the request (name → description). */
  headers?: Record<string, string>;
  /** `Idempotency-Key` handled by api/idempotency.ts: on by default for POST; false for an operation that keeps its own. */
  idempotency?: boolean;
  /**
   * An operation that needs no credential of the api (define it with `openOperation`): `anyone`
   * (POST /temp-mail/inboxes), or `tempInboxToken`, a disposable inbox's own token, which its
   * handler checks. It has no scope, no policies of its resource and no Idempotency-Key, and is
   * counted by client address as every request without a key is (api/plugins/auth.ts).
   */
  open?: 'anyone' | 'tempInboxToken';
  handler(ctx: RouteContext<P, Q, B>): Promise<unknown>;
}

export type Operation = OperationSpec<unknown, unknown, unknown>;

/** Types one operation: its handler sees its params, query and body as its schemas parse them. */
export const operation = <P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  spec: OperationSpec<P, Q, B>,
): Operation => spec;

type OpenSpec<P, Q, B> = Omit<
  OperationSpec<P, Q, B>,
  'scope' | 'stepUp' | 'admit' | 'openToTestKeys' | 'idempotency' | 'open' | 'handler'
> & {
  open: NonNullable<OperationSpec<P, Q, B>['open']>;
  handler(ctx: Omit<RouteContext<P, Q, B>, 'credential'>): Promise<unknown>;
};

/** An operation without a credential of the api (`OperationSpec.open`): its handler is given none. */
export const openOperation = <P = Record<string, never>, Q = Record<string, never>, B = undefined>(
  spec: OpenSpec<P, Q, B>,
): Operation =>
  operation<P, Q, B>({
    ...spec,
    scope: null,
    idempotency: false,
    handler: ({ credential: _none, ...ctx }) => spec.handler(ctx),
  });

/**
 * A resource of the api (one folder of api/routes/): its OpenAPI tag, its two policies, declared
 * once for all its operations so that an operation added to it cannot forget them, and its
 * operations. The policies are enforced here and stated in each operation's description.
 */
export interface Resource {
  tag: string;
  /** The tag's description in the OpenAPI document: what the resource is. */
  description: string;
  /** Test mode (api/modes.ts): `partitioned` data of the credential's mode, or configuration both modes `shared`. */
  modes: Modes;
  /** What credentials narrowed to some addresses or domains may do here (api/narrowing.ts). */
  narrowed: NarrowedPolicy;
  operations(deps: ApiDeps): Operation[];
}

/** An operation as registered, with every error code it may answer with: what the OpenAPI document describes. */
export interface MountedOperation {
  resource: Resource;
  spec: Operation;
  /** The operation's description with the sentences its resource's policies add. */
  description: string;
  /** Request headers it documents (name → description): its own, and `Idempotency-Key` where honoured. */
  headers: Record<string, string>;
  errors: ErrorCode[];
}

/** Registers every operation of a resource: the one way a route of the api is registered. */
export function mount(app: FastifyInstance, deps: ApiDeps, resource: Resource): MountedOperation[] {
  return resource.operations(deps).map((spec) => {
    if (spec.rawBody) {
      const raw = spec.rawBody;
      // Its own scope: the bytes parser must not reach the JSON routes.
      app.register(async (scope) => {
        scope.removeAllContentTypeParsers();
        scope.addContentTypeParser(
          '*',
          raw.stream ? streamParser(raw.maxBytes, raw.tooLarge) : rawParser(raw.maxBytes, raw.tooLarge),
        );
        route(scope, deps, resource, spec);
      });
    } else route(app, deps, resource, spec);
    const idempotent = spec.idempotency ?? spec.method === 'POST';
    const description = spec.open
      ? [spec.description ?? OPEN_DOC[spec.open]]
      : [
          spec.description ??
            (spec.scope
              ? `Scope: ${scopesOf(spec.scope)
                  .map((s) => `\`${s}\``)
                  .join(', ')}.`
              : 'Needs a credential, no scope.'),
          spec.stepUp
            ? 'OAuth tokens need step-up elevation (403 `step_up_required`); API keys are never asked.'
            : null,
          narrowedDoc(resource.narrowed, spec.method),
          modeDoc(resource.modes),
        ];
    return {
      resource,
      spec,
      description: description.filter((d) => d !== null).join(' '),
      headers: idempotent ? { 'idempotency-key': IDEMPOTENCY_HEADER_DOC, ...spec.headers } : { ...spec.headers },
      errors: errorCodes(resource, spec),
    };
  });
}

const OPEN_DOC = {
  anyone: 'Needs no credential.',
  tempInboxToken: "Needs the inbox's own access token as `Authorization: Bearer <token>`, no key.",
} as const;

/** An operation without a credential may answer these: the count by client address, an unreadable request or input, a fault, the database away. */
const OPEN_OPERATION: readonly ErrorCode[] = [
  'rate_limited',
  'invalid_request',
  'invalid_parameter',
  'unknown_parameter',
  'internal_error',
  'unreachable',
];

/** Any operation may answer these: a credential refused, the rate limit, an unreadable request or input, a fault, the database away. */
const EVERY_OPERATION: readonly ErrorCode[] = [
  'missing_api_key',
  'invalid_api_key',
  'revoked_api_key',
  'expired_api_key',
  'invalid_access_token',
  'expired_access_token',
  'grant_required',
  'grant_expired',
  'grant_workspace_gone',
  'grant_access_lost',
  'rate_limited',
  'invalid_request',
  'invalid_parameter',
  'unknown_parameter',
  'internal_error',
  'unreachable',
];

/**
 * Every code an operation may answer with: what `route` below enforces for its declaration, and
 * what its handler declares (`errors`, `issueCodes`). Kept beside `route` so that a check added
 * there is documented here.
 */
export function errorCodes(resource: Resource, spec: Operation): ErrorCode[] {
  const codes = new Set<ErrorCode>(spec.open ? OPEN_OPERATION : EVERY_OPERATION);
  const add = (...more: ErrorCode[]) => {
    for (const code of more) codes.add(code);
  };
  const changes = spec.method !== 'GET';
  if (spec.open) {
    if (changes) add('malformed_json', 'body_too_large');
    if (spec.query && 'cursor' in ((spec.query as { shape?: object }).shape ?? {})) add('invalid_cursor');
    add(...Object.values(spec.issueCodes ?? {}), ...(spec.errors ?? []));
    return [...codes];
  }
  // An upload's bytes are read by its own parser, which answers `rawBody.tooLarge` and parses no JSON.
  if (changes && !spec.rawBody) add('malformed_json', 'body_too_large');
  if (resource.narrowed === 'refuse' || (changes && resource.narrowed !== 'open')) add('capability_unsupported');
  if (resource.modes === 'shared' && changes && !spec.openToTestKeys) add('beyond_caller_authority');
  if (spec.scope) add('insufficient_scope');
  if (spec.rawBody) add(spec.rawBody.tooLarge);
  if (spec.failure) add(spec.failure);
  if (spec.stepUp) add('step_up_required');
  if (spec.idempotency ?? spec.method === 'POST')
    add('invalid_idempotency_key', 'idempotency_key_reuse', 'idempotency_key_in_use');
  if (spec.query && 'cursor' in ((spec.query as { shape?: object }).shape ?? {})) add('invalid_cursor');
  add(...Object.values(spec.issueCodes ?? {}), ...(spec.errors ?? []));
  return [...codes];
}

/**
 * One operation. Its zod schemas are both the only validation and the OpenAPI description
 * (api/openapi.ts): fastify is given no schema, so there is no second validator to drift. In
 * order: the credential, the narrowed-key policy (before scope and input, so a refusal does not
 * depend on them), the mode, the scope, step-up, `admit`, the input, then the handler under the
 * Idempotency-Key layer (api/idempotency.ts).
 */
function route(app: FastifyInstance, deps: ApiDeps, resource: Resource, spec: Operation): void {
  const status = spec.status ?? 200;
  const idempotent = spec.idempotency ?? spec.method === 'POST';
  const partitioned = resource.modes === 'partitioned';
  app.route({
    method: spec.method,
    url: spec.url,
    config: { auth: spec.open === undefined, failure: spec.failure },
    ...(spec.bodyLimit ? { bodyLimit: spec.bodyLimit } : {}),
    handler: async (request, reply) => {
      // Open operations are made by `openOperation`, whose handlers never see this, and take no
      // Idempotency-Key, so the answer layer never reads it either: null stands in for none.
      const credential = spec.open ? (null as unknown as Credential) : authorised(request, resource, spec, partitioned);
      // Every route's input passes here before its schema sees it: the strings PostgreSQL cannot
      // store, and nesting deep enough to exhaust a recursive walk, are refused once for all.
      refuseUnsafeInput('path', request.params);
      refuseUnsafeInput('query', request.query);
      if (!spec.rawBody) refuseUnsafeInput('body', request.body);
      const params = parse(spec.params, request.params ?? {});
      if (!spec.query) noFields(request.query);
      const query = parse(spec.query, request.query ?? {});
      const body = spec.rawBody
        ? Buffer.isBuffer(request.body) || (spec.rawBody.stream && request.body instanceof Readable)
          ? request.body
          : spec.rawBody.stream
            ? Readable.from([])
            : Buffer.alloc(0)
        : spec.body
          ? parse(spec.body, request.body ?? {}, spec.issueCodes)
          : noFields(request.body);
      return answer(deps.idempotencyKeys, { request, reply, credential, status, idempotent }, (head) =>
        spec.handler({ request, reply: head, params, query, body, credential }),
      );
    },
  });
}

/** The request's credential as the operation may use it, or the refusal: credential, narrowing, mode, scope, step-up, `admit`. */
function authorised(request: FastifyRequest, resource: Resource, spec: Operation, partitioned: boolean): Credential {
  if (!request.credential) throw new ApiError('missing_api_key', 'Send a key as `Authorization: Bearer <key>`.');
  const narrowed = narrowedRefusal(resource.narrowed, spec.method, request.credential);
  if (narrowed) throw narrowed;
  const credential = modeView(request.credential, partitioned, spec);
  const lacking = scopesOf(spec.scope).find((s) => !credential.scopes.includes(s));
  if (lacking) throw new ApiError('insufficient_scope', `This operation needs the \`${lacking}\` scope.`, null);
  if (spec.stepUp) {
    const refusal = stepUpRefusal(credential, Date.now());
    if (refusal) throw new ApiError('step_up_required', refusal, null, 403);
  }
  spec.admit?.(credential);
  return credential;
}

/** The scopes an operation needs: none, one, or every one of a list. */
const scopesOf = (scope: Permission | readonly Permission[] | null): readonly Permission[] =>
  scope === null ? [] : typeof scope === 'string' ? [scope] : scope;

/** Reads an upload's bytes, refusing at the first byte past `maxBytes` (a declared length past it before any). */
/** The body as it arrives, for a handler that streams it; a declared length past `maxBytes` is refused first. */
function streamParser(maxBytes: number, tooLarge: ErrorCode) {
  return (request: FastifyRequest, payload: Readable, done: (err: Error | null, body?: Readable) => void) => {
    if (Number(request.headers['content-length'] ?? 0) > maxBytes)
      return done(new ApiError(tooLarge, `At most ${maxBytes} bytes.`, null, 413));
    done(null, payload);
  };
}

function rawParser(maxBytes: number, tooLarge: ErrorCode) {
  const refusal = () => new ApiError(tooLarge, `At most ${maxBytes} bytes.`, null, 413);
  return (
    request: FastifyRequest,
    payload: NodeJS.ReadableStream,
    done: (err: Error | null, body?: Buffer) => void,
  ) => {
    if (Number(request.headers['content-length'] ?? 0) > maxBytes) return done(refusal());
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (err: Error | null, body?: Buffer) => {
      if (settled) return;
      settled = true;
      done(err, body);
    };
    payload.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) settle(refusal());
      else chunks.push(chunk);
    });
    payload.on('end', () => settle(null, Buffer.concat(chunks)));
    payload.on('error', (error: Error) => settle(error));
  };
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
