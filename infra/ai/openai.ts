import OpenAI from 'openai';
import { AiUnavailable, type ChatModel, type ChatRequest } from './port.ts';

/** An OpenAI-compatible chat-completions endpoint (infra/config.ts `ai`). */
export interface OpenAiConfig {
  /** Up to the version segment, e.g. `https://api.openai.com/v1`: the client appends `/chat/completions`. */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** One request, connection to last byte. */
  timeoutMs: number;
}

/**
 * The chat model through the `openai` client. No retries: a caller waits at most `timeoutMs`,
 * and a failure answers 503, which clients retry on their own terms. The client's logging is off:
 * its debug output would carry the request headers, the key among them.
 */
export class OpenAiChatModel implements ChatModel {
  readonly #client: OpenAI;
  readonly #model: string;

  constructor(config: OpenAiConfig) {
    this.#client = new OpenAI({
      baseURL: config.baseUrl,
      apiKey: config.apiKey,
      timeout: config.timeoutMs,
      maxRetries: 0,
      logLevel: 'off',
    });
    this.#model = config.model;
  }

  async complete(request: ChatRequest): Promise<string> {
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.#client.chat.completions.create({
        model: this.#model,
        messages: [
          { role: 'system', content: request.system },
          { role: 'user', content: request.user },
        ],
        ...(request.json ? { response_format: { type: 'json_object' as const } } : {}),
      });
    } catch (error) {
      throw failureOf(error);
    }
    const content = completion?.choices?.[0]?.message?.content;
    if (typeof content !== 'string' || content.trim() === '')
      throw new AiUnavailable('empty', 'The model answered without a message.');
    return content;
  }
}

function failureOf(error: unknown): AiUnavailable {
  if (error instanceof OpenAI.APIConnectionTimeoutError)
    return new AiUnavailable('timeout', 'The model did not answer in time.');
  if (error instanceof OpenAI.APIConnectionError)
    return new AiUnavailable('unreachable', 'The model endpoint could not be reached.');
  if (error instanceof OpenAI.APIError && typeof error.status === 'number')
    return new AiUnavailable('refused', `The model endpoint answered HTTP ${error.status}.`, error.status);
  // A 2xx body that is not JSON lands here too: the client could not read it.
  return new AiUnavailable('empty', 'The model answered with nothing readable.');
}
