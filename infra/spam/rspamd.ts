import { z } from 'zod';
import type { FilterVerdict } from '../../domain/messages/spam.ts';
import type { SpamFilter, SpamQuestion } from './port.ts';

/** rspamd's `/checkv2` answer, the parts read here. */
const CheckAnswer = z.object({
  action: z.string(),
  score: z.number(),
  required_score: z.number(),
  symbols: z.record(z.string(), z.object({ name: z.string(), score: z.number() }).passthrough()).default({}),
});

export interface RspamdOptions {
  /** `SPAM_FILTER_URL`: the normal worker, `http://host:11333`. */
  url: string;
  /** How long one check may take before the message goes on without a verdict. */
  timeoutMs?: number;
  /** Sent as `Password` when the worker asks for one. */
  password?: string;
  onError?: (error: unknown) => void;
}

/**
 * rspamd over its HTTP protocol (`POST /checkv2`, the envelope in headers: IP, Helo, From, Rcpt,
 * Queue-Id), with Node's fetch. Any failure answers null (see the port). rspamd does its own
 * DNS (RBLs, SPF): point it at resolvers it may use.
 */
export class RspamdFilter implements SpamFilter {
  readonly #endpoint: string;
  readonly #timeoutMs: number;
  readonly #password: string | undefined;
  readonly #onError: (error: unknown) => void;

  constructor(options: RspamdOptions) {
    const url = new URL(options.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new Error('SPAM_FILTER_URL must be http: or https:');
    this.#endpoint = new URL('checkv2', url.href.endsWith('/') ? url.href : `${url.href}/`).href;
    this.#timeoutMs = options.timeoutMs ?? 10_000;
    this.#password = options.password;
    this.#onError = options.onError ?? ((error) => console.error('spam filter:', error));
  }

  async check(question: SpamQuestion): Promise<FilterVerdict | null> {
    const headers = new Headers({ IP: question.ip, 'Queue-Id': question.queueId, 'Content-Type': 'message/rfc822' });
    if (question.helo) headers.set('Helo', question.helo);
    if (question.mailFrom) headers.set('From', question.mailFrom);
    for (const rcpt of question.rcptTo) headers.append('Rcpt', rcpt);
    if (this.#password) headers.set('Password', this.#password);
    try {
      const response = await fetch(this.#endpoint, {
        method: 'POST',
        headers,
        // Node's fetch sends any Uint8Array; the type wants one over a plain ArrayBuffer, which a
        // Buffer from the pool is not (a copy of the whole message would be the only other way).
        body: question.raw as unknown as Uint8Array<ArrayBuffer>,
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      if (!response.ok) throw new Error(`rspamd answered HTTP ${response.status}`);
      const answer = CheckAnswer.parse(await response.json());
      return {
        action: answer.action,
        score: answer.score,
        requiredScore: answer.required_score,
        symbols: Object.values(answer.symbols)
          .filter((s) => s.score !== 0)
          .sort((a, b) => b.score - a.score || a.name.localeCompare(b.name))
          .map((s) => s.name),
      };
    } catch (error) {
      this.#onError(error);
      return null;
    }
  }
}
