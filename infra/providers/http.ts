import http from 'node:http';
import https from 'node:https';
import { gunzipSync } from 'node:zlib';
import { ProviderError } from './port.ts';

export interface ProviderHttpOptions {
  /** The SSRF guard's agents (infra/net/outbound-url.ts). */
  agents: { http: http.Agent; https: https.Agent };
  timeoutMs: number;
  /** The largest answer read; a provider's page is far smaller. */
  maxBytes: number;
  /**
   * Files kept between the steps of one import: a provider's export file is read a page per step,
   * and downloading it again for each page would make the import quadratic. Lost in a crash,
   * when the page under way downloads it again.
   */
  kept: KeptFiles;
  /** How long an export job the provider still builds is left before it is asked again (SendGrid's contacts). */
  exportPollMs: number;
}

/** The last few downloads, by a key naming the file and the key that may read it. */
export class KeptFiles {
  readonly #files = new Map<string, unknown>();
  constructor(private readonly max = 2) {}

  async get<T>(key: string, load: () => Promise<T>): Promise<T> {
    if (this.#files.has(key)) {
      const value = this.#files.get(key) as T;
      this.#files.delete(key);
      this.#files.set(key, value);
      return value;
    }
    const value = await load();
    this.#files.set(key, value);
    while (this.#files.size > this.max) this.#files.delete(this.#files.keys().next().value as string);
    return value;
  }
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
  return requestJson('GET', url, headers, options);
}

/** One request with a JSON body (a provider's job to start), answered as `getJson` answers. */
export async function requestJson(
  method: 'GET' | 'POST',
  url: URL,
  headers: Record<string, string>,
  options: ProviderHttpOptions,
  body?: unknown,
): Promise<JsonAnswer> {
  const answer = await exchange(method, url, headers, options, options.maxBytes, body);
  const text = answer.bytes.toString('utf8');
  let parsed: unknown = text;
  try {
    parsed = text === '' ? null : JSON.parse(text);
  } catch {
    // Left as text: error answers of some providers are plain text.
  }
  const retryAfter = answer.headers['retry-after'];
  return {
    status: answer.status,
    body: parsed,
    retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
    headers: answer.headers,
  };
}

/**
 * A file a provider names for download (an export's signed URL): no credentials are sent, as
 * the URL is its own authority and may be on another host. Gunzipped when it is gzip (by its
 * magic bytes: storage hosts label it variously); `maxBytes` bounds it before and after.
 */
export async function download(url: URL, options: ProviderHttpOptions, maxBytes: number): Promise<Buffer> {
  const answer = await exchange('GET', url, {}, options, maxBytes);
  if (answer.status >= 500 || answer.status === 429)
    throw new ProviderError('unavailable', `the download from ${url.host} answered ${answer.status}`);
  if (answer.status !== 200)
    throw new ProviderError('failed', `the download from ${url.host} answered ${answer.status}`);
  if (answer.bytes[0] !== 0x1f || answer.bytes[1] !== 0x8b) return answer.bytes;
  try {
    return gunzipSync(answer.bytes, { maxOutputLength: maxBytes });
  } catch (error) {
    throw new ProviderError('failed', `the download from ${url.host} is no readable gzip: ${(error as Error).message}`);
  }
}

function exchange(
  method: 'GET' | 'POST',
  url: URL,
  headers: Record<string, string>,
  options: ProviderHttpOptions,
  maxBytes: number,
  body?: unknown,
): Promise<{ status: number; bytes: Buffer; headers: http.IncomingHttpHeaders }> {
  const client = url.protocol === 'https:' ? https : http;
  const payload = body === undefined ? null : Buffer.from(JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method,
      agent: url.protocol === 'https:' ? options.agents.https : options.agents.http,
      headers: {
        accept: 'application/json',
        ...(payload ? { 'content-type': 'application/json', 'content-length': String(payload.length) } : {}),
        ...headers,
      },
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
        if (size > maxBytes) {
          req.destroy(new ProviderError('failed', `the answer of ${url.pathname} is larger than ${maxBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks), headers: res.headers });
      });
      res.on('error', (error) => {
        clearTimeout(timer);
        reject(new ProviderError('unavailable', `the answer of ${url.host} broke off: ${error.message}`));
      });
    });
    req.end(payload ?? undefined);
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
