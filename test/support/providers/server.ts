import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the loopback provider saw it. */
export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  /** The request's body as text (empty for a GET). */
  body: string;
  /** When it arrived (ms since the epoch). */
  at: number;
}

export interface Answer {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * A provider's API on loopback, for the adapters' tests: `route` answers each request as the
 * provider documents it (paths, auth header, paging, error bodies). Around it: a log of requests,
 * 429s on demand (`throttle`: the next n requests get the provider's rate-limit answer with
 * `Retry-After`), a gate that holds answers (`hold`) so a test can stop the service mid-import,
 * and optionally the provider's documented rate limits (`limits`).
 */
export interface ProviderServer {
  url: string;
  seen: SeenRequest[];
  /** After `after` more requests, the next `times` get the provider's 429 with `Retry-After`. */
  throttle(times: number, retryAfterSeconds?: number, after?: number): void;
  /** While held, every answer waits; `release` lets them all go. */
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

/**
 * A documented rate limit: the requests of one bucket (an endpoint family) a second. The window is
 * fixed, as the providers' reset headers describe it: past `perSecond` requests in it, the rest
 * get the rate-limit answer until it ends.
 */
export interface RateLimit {
  bucket: string;
  perSecond: number;
}

export async function startProviderServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  route: (req: SeenRequest) => Answer,
  /** The provider's 429; `perSecond` when a documented limit (`limits`) refused it. */
  rateLimited: (retryAfterSeconds: number, perSecond?: number) => Answer,
  limits?: (path: string) => RateLimit | null,
): Promise<ProviderServer> {
  const seen: SeenRequest[] = [];
  const windows = new Map<string, { start: number; count: number }>();
  /** Whether the request is past its bucket's limit; its limit and the seconds until its window ends when it is. */
  const overLimit = (path: string, at: number): { seconds: number; perSecond: number } | null => {
    const limit = limits?.(path);
    if (!limit) return null;
    let window = windows.get(limit.bucket);
    if (!window || at - window.start >= 1000) {
      window = { start: at, count: 0 };
      windows.set(limit.bucket, window);
    }
    if (window.count >= limit.perSecond)
      return { seconds: Math.max(1, Math.ceil((window.start + 1000 - at) / 1000)), perSecond: limit.perSecond };
    window.count++;
    return null;
  };
  let throttled = 0;
  let throttleAfter = 0;
  let retryAfter = 1;
  let gate: Promise<void> | null = null;
  let open: () => void = () => {};
  const server = http.createServer(async (req, res) => {
    const url = new URL(req.url ?? '/', 'http://loopback');
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const request = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.searchParams,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
      at: Date.now(),
    };
    seen.push(request);
    if (gate) await gate;
    let answer: Answer;
    const limited = overLimit(request.path, request.at);
    if (throttled > 0 && throttleAfter === 0) {
      throttled--;
      answer = rateLimited(retryAfter);
    } else if (limited !== null) {
      answer = rateLimited(limited.seconds, limited.perSecond);
    } else {
      if (throttleAfter > 0) throttleAfter--;
      try {
        answer = route(request);
      } catch (error) {
        answer = { status: 500, body: { message: String(error) } };
      }
    }
    const raw = Buffer.isBuffer(answer.body);
    const body =
      raw || typeof answer.body === 'string' ? (answer.body as string | Buffer) : JSON.stringify(answer.body);
    res.writeHead(answer.status, {
      'content-type': raw
        ? 'application/octet-stream'
        : typeof answer.body === 'string'
          ? 'text/plain'
          : 'application/json',
      ...answer.headers,
    });
    res.end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      open();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.teardown(close);
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    throttle(times, seconds = 1, after = 0) {
      throttled = times;
      throttleAfter = after;
      retryAfter = seconds;
    },
    hold() {
      gate = new Promise((resolve) => {
        open = resolve;
      });
    },
    release() {
      gate = null;
      open();
    },
    close,
  };
}

/** `limit`/`after` paging over rows by id, as Resend pages (the row named by `after` excluded). */
export function afterPage<T extends { id: string }>(
  rows: T[],
  query: URLSearchParams,
): { page: T[]; hasMore: boolean } | null {
  const limit = Number(query.get('limit') ?? rows.length);
  const after = query.get('after');
  let start = 0;
  if (after !== null) {
    const i = rows.findIndex((r) => r.id === after);
    if (i < 0) return null;
    start = i + 1;
  }
  const page = rows.slice(start, start + limit);
  return { page, hasMore: start + limit < rows.length };
}
