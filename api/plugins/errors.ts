import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ZodError, type core } from 'zod';
import { DomainError } from '../../domain/shared/errors.ts';
import { ApiError, type ErrorBody } from '../errors/api-error.ts';
import { CATALOGUE, isErrorCode, TYPE_BY_STATUS } from '../errors/catalogue.ts';
import { isUnreachable } from '../errors/unreachable.ts';
import { newRequestId, REQUEST_ID_HEADER } from '../headers.ts';
import { admitRequest, recordRequest, type AuthDeps } from './auth.ts';

/** The one place an exception becomes the spec's envelope. */
export function registerErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    let api = toApiError(error);
    if (api.status >= 500) request.log.error({ err: error }, 'request failed');
    const failure = request.routeOptions.config.failure;
    if (api.code === 'internal_error' && failure) api = new ApiError(failure, CATALOGUE[failure][1], null, 500);
    return sendError(request, reply, api);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new ApiError('resource_not_found', `No route ${request.method} ${request.url.split('?')[0]}.`, null, 404),
    ),
  );
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot take (a percent-encoding that does not
 * decode, a path parameter over the length limit) is answered before any hook runs, so this does
 * what the hooks do for every other request: the request id, the count with its RateLimit headers
 * (under a valid key, else by address, as on an unknown route), the envelope and the key's log.
 */
export function answerFrameworkError(deps: AuthDeps) {
  return async (error: FastifyError, request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const started = performance.now();
    reply.header(REQUEST_ID_HEADER, request.id);
    let cause: unknown = error;
    try {
      await admitRequest(deps, request, reply, 'optional');
    } catch (refusal) {
      cause = refusal;
    }
    const api = toApiError(cause);
    if (api.status >= 500) request.log.error({ err: cause }, 'request failed');
    sendError(request, reply, api);
    recordRequest(deps.requestLog, request, reply, performance.now() - started);
  };
}

/**
 * Fastify's `clientErrorHandler`: bytes Node's parser refuses before they make a request (headers
 * past its size limit, broken framing, a request that did not arrive in time) get the envelope
 * and a request id, as every other refusal does, instead of Node's or Fastify's own bodies. They
 * are not counted: no request was read, so there is no credential, and a flood of garbage should
 * not cost a database write each. The connection closes after the answer, as Node's does; nothing
 * is written once an answer to a request on it has begun, which would corrupt that answer.
 */
export function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const api =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new ApiError(
          'headers_too_large',
          'The request line and headers are larger than the service reads (16 KiB).',
          null,
          431,
        )
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new ApiError('request_timeout', 'The request did not arrive whole in time.', null, 408)
        : new ApiError('invalid_request', 'The request cannot be read: it is not well-formed HTTP/1.1.', null, 400);
  const requestId = newRequestId();
  this.log.info({ err: error, requestId }, 'unreadable request');
  const origin = `${'encrypted' in socket ? 'https' : 'http'}://${socket.localFamily === 'IPv6' ? `[${socket.localAddress}]` : socket.localAddress}:${socket.localPort}`;
  const body: ErrorBody = {
    error: {
      type: api.type,
      code: api.code,
      message: api.message,
      param: null,
      docUrl: `${origin}/docs/errors#${api.code}`,
      requestId,
    },
  };
  const json = JSON.stringify(body);
  socket.end(
    `HTTP/1.1 ${api.status} ${STATUS_CODES[api.status]}\r\n${REQUEST_ID_HEADER}: ${requestId}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
    () => socket.destroy(),
  );
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  request.errorCode = error.code;
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply.code(error.status).type('application/json').send(errorBody(request, error));
}

export function errorBody(request: FastifyRequest, error: ApiError): ErrorBody {
  return {
    error: {
      type: error.type,
      code: error.code,
      message: error.message,
      param: error.param,
      docUrl: docUrl(request, error.code),
      requestId: request.id,
    },
  };
}

/** Seconds a client is asked to wait before retrying a 503. */
export const RETRY_AFTER_SECONDS = 2;

export function unreachable(message: string): ApiError {
  return new ApiError('unreachable', message, null, 503, { 'Retry-After': String(RETRY_AFTER_SECONDS) });
}

function docUrl(request: FastifyRequest, code: string): string {
  return `${request.protocol}://${request.host}/docs/errors#${code}`;
}

export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof DomainError) {
    const status = isErrorCode(error.code) ? CATALOGUE[error.code][0] : 422;
    const wait = error.retryAfterSeconds;
    return new ApiError(
      error.code,
      error.message,
      error.param,
      status,
      wait === undefined ? undefined : { 'Retry-After': String(wait) },
    );
  }
  if (error instanceof ZodError) return fromZod(error.issues);
  if (isUnreachable(error)) {
    return unreachable(
      'The database did not answer; retry shortly. A change in flight may or may not have been stored: a retry with the same Idempotency-Key is always safe.',
    );
  }
  const e = error as { code?: string; statusCode?: number; message?: string };
  switch (e.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('malformed_json', 'The body is not valid JSON.', null, 400);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('body_too_large', 'The body is larger than the service accepts.', null, 413);
    case 'FST_ERR_BAD_URL':
      return new ApiError(
        'invalid_request',
        'The URL cannot be read: a percent-encoded sequence in its path does not decode.',
        null,
        400,
      );
    case 'FST_ERR_MAX_PARAM_LENGTH':
      return new ApiError('resource_not_found', 'No resource of this service has an id that long.', null, 404);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new ApiError('invalid_request', e.message ?? 'The request cannot be read.', null, 400);
  }
  if (error instanceof SyntaxError && e.statusCode === 400)
    return new ApiError('malformed_json', 'The body is not valid JSON.', null, 400);
  if (e.statusCode && e.statusCode >= 400 && e.statusCode < 500 && TYPE_BY_STATUS[e.statusCode]) {
    return new ApiError('invalid_request', e.message ?? 'Bad request.', null, e.statusCode);
  }
  return new ApiError('internal_error', 'The service failed to answer this request.', null, 500);
}

/**
 * The first issue decides the answer: a field we do not know beats a field we do not like.
 * `codes` names fields whose every problem has a code of its own (a template's `document` is
 * `invalid_template` down to the offending block, unknown keys included).
 */
export function fromZod(issues: core.$ZodIssue[], codes: Record<string, string> = {}): ApiError {
  const unknown = issues.find((i) => i.code === 'unrecognized_keys');
  if (unknown && unknown.code === 'unrecognized_keys') {
    const path = [...unknown.path, unknown.keys[0]!];
    const param = path.join('.');
    const own = codes[String(path[0])];
    if (own && path.length > 1)
      return new ApiError(own, `\`${param}\` is not a field of ${String(path[0])}.`, param, 422);
    return new ApiError('unknown_parameter', `\`${param}\` is not a parameter of this operation.`, param, 422);
  }
  const issue = issues[0]!;
  const path = [...issue.path.map((p) => (typeof p === 'symbol' ? String(p) : p))];
  const param = path.join('.') || null;
  const code = codes[String(path[0])] ?? 'invalid_parameter';
  return new ApiError(code, param ? `\`${param}\`: ${issue.message}` : issue.message, param, 422);
}
