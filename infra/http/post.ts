import http from 'node:http';
import https from 'node:https';

export interface PostResult {
  status: number;
  /** Seconds or an HTTP date, as the receiver sent it. */
  retryAfter: string | null;
  /** The start of the response body, at most `excerptBytes` long. */
  excerpt: string;
  durationMs: number;
}

export interface PostOptions {
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
  agents: { http: http.Agent; https: https.Agent };
  excerptBytes?: number;
}

/**
 * One POST with a deadline on the whole exchange, reading at most a bounded start of the answer:
 * a receiver can neither hold a worker for ever nor make it buffer a large response.
 */
export function postJson(url: URL, options: PostOptions): Promise<PostResult> {
  const started = process.hrtime.bigint();
  const limit = options.excerptBytes ?? 1024;
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const req = client.request(url, {
      method: 'POST',
      agent: url.protocol === 'https:' ? options.agents.https : options.agents.http,
      headers: {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(options.body),
        ...options.headers,
      },
    });
    const timer = setTimeout(
      () => req.destroy(Object.assign(new Error(`no answer within ${options.timeoutMs} ms`), { code: 'ETIMEDOUT' })),
      options.timeoutMs,
    );
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => {
        clearTimeout(timer);
        const retryAfter = res.headers['retry-after'];
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: typeof retryAfter === 'string' ? retryAfter : null,
          // Kept in PostgreSQL, whose text cannot hold NUL (invalid UTF-8 already decodes to U+FFFD).
          excerpt: Buffer.concat(chunks).subarray(0, limit).toString('utf8').replaceAll('\u0000', '\ufffd'),
          durationMs: Math.round(Number(process.hrtime.bigint() - started) / 1e6),
        });
      };
      res.on('data', (chunk: Buffer) => {
        if (size < limit) chunks.push(chunk);
        size += chunk.length;
        // Enough read: the rest of the answer does not matter, and the socket is not reused.
        if (size >= limit) {
          res.destroy();
          finish();
        }
      });
      res.on('end', finish);
      res.on('error', finish);
    });
    req.end(options.body);
  });
}
