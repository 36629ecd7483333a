import http from 'node:http';
import https from 'node:https';
import { ProviderError } from './port.ts';

export interface ProviderHttpOptions {
  /** The SSRF guard's agents (infra/net/outbound-url.ts). */
  agents: { http: http.Agent; https: https.Agent };
  timeoutMs: number;
  /** The largest answer read; a provider's page is far smaller. */
  maxBytes: number;
}

export interface JsonAnswer {
  status: number;
  body: unknown;
  retryAfter: string | null;
  headers: http.IncomingHttpHeaders;
}

/**
 * One GET of a provider's JSON with a deadline on the whole exchange and a bound on the answer.
 * Redirects are not followed: the base URL is configured, and a redirect elsewhere would carry the key.
 */
export function getJson(url: URL, headers: Record<string, string>, options: ProviderHttpOptions): Promise<JsonAnswer> {
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'GET',
      agent: url.protocol === 'https:' ? options.agents.https : options.agents.http,
      headers: { accept: 'application/json', ...headers },
    });
    const timer = setTimeout(
      () => req.destroy(new ProviderError('unavailable', `no answer within ${options.timeoutMs} ms`)),
      options.timeoutMs,
    );
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(
        error instanceof ProviderError
          ? error
          : new ProviderError('unavailable', `could not reach ${url.host}: ${(error as Error).message}`),
      );
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > options.maxBytes) {
          req.destroy(
            new ProviderError('failed', `the answer of ${url.pathname} is larger than ${options.maxBytes} bytes`),
          );
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = text === '' ? null : JSON.parse(text);
        } catch {
          // Left as text: error answers of some providers are plain text.
        }
        const retryAfter = res.headers['retry-after'];
        resolve({
          status: res.statusCode ?? 0,
          body,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
          headers: res.headers,
        });
      });
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(new ProviderError('unavailable', `the answer of ${url.host} broke off: ${error.message}`));
      });
    });
    req.end();
  });
}

/** `Retry-After` as milliseconds: seconds or an HTTP date; 1 s when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number {
  if (value === null) return 1000;
  const seconds = Number(value);
  if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
  const at = Date.parse(value);
  return Number.isNaN(at) ? 1000 : Math.max(0, at - now);
}

/**
 * The error every provider shares: 429 (rate limited), 5xx (unavailable). Answers null for a 2xx;
 * 401/403 and other 4xx are the adapter's to read (`refusal`), as each words them differently.
 */
export function commonError(provider: string, answer: JsonAnswer): ProviderError | null {
  if (answer.status >= 200 && answer.status < 300) return null;
  if (answer.status === 429)
    return new ProviderError('rate_limited', `${provider} asked to slow down`, retryAfterMs(answer.retryAfter));
  if (answer.status >= 500) return new ProviderError('unavailable', `${provider} answered ${answer.status}`);
  return new ProviderError('failed', `${provider} answered ${answer.status}: ${messageOf(answer.body)}`);
}

/** The provider's own words from an error body, whatever its shape (a message field, or text). */
export function messageOf(body: unknown): string {
  if (typeof body === 'string') return body.slice(0, 300);
  if (body && typeof body === 'object') {
    const o = body as Record<string, unknown>;
    for (const key of ['message', 'Message', 'error', 'detail']) {
      const v = o[key];
      if (typeof v === 'string') return v.slice(0, 300);
    }
    const errors = o.errors;
    if (Array.isArray(errors) && errors[0] && typeof errors[0] === 'object') {
      const m = (errors[0] as Record<string, unknown>).message;
      if (typeof m === 'string') return m.slice(0, 300);
    }
  }
  return 'no message';
}

/** The base URL (configured, maybe with a path such as `/v3`) joined with a path and query. */
export function endpoint(
  base: string,
  path: string,
  query: Record<string, string | number | null | undefined> = {},
): URL {
  const url = new URL(base.replace(/\/+$/, '') + path);
  for (const [k, v] of Object.entries(query)) if (v !== null && v !== undefined) url.searchParams.set(k, String(v));
  return url;
}
