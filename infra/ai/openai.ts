import OpenAI from 'openai';
import {
  AiUnavailable,
  type ChatModel,
  type ChatRequest,
  type ConversationMessage,
  type ConverseRequest,
  type Turn,
} from './port.ts';

/** An OpenAI-compatible chat-completions endpoint (infra/config.ts `ai`). */
export interface OpenAiConfig {
  /** Up to the version segment, e.g. `https://api.openai.com/v1`: the client appends `/chat/completions`. */
  baseUrl: string;
  apiKey: string;
  model: string;
  /** `AI_MODEL_ADVANCED`: the model a task's `advanced` setting asks for; absent, `model`. */
  advancedModel?: string;
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
  readonly #advancedModel: string;

  constructor(config: OpenAiConfig) {
    this.#client = new OpenAI({
      baseURL: config.baseUrl,
      apiKey: config.apiKey,
      timeout: config.timeoutMs,
      maxRetries: 0,
      logLevel: 'off',
    });
    this.#model = config.model;
    this.#advancedModel = config.advancedModel ?? config.model;
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

  /**
   * One turn: the conversation and the tools out, the model's content and tool calls back. Only
   * function calls are read (the protocol's other kinds name no tool of ours). A turn with neither
   * content nor a call is `empty`.
   */
  async converse(request: ConverseRequest): Promise<Turn> {
    let completion: OpenAI.Chat.Completions.ChatCompletion;
    try {
      completion = await this.#client.chat.completions.create({
        model: request.model === 'advanced' ? this.#advancedModel : this.#model,
        messages: request.messages.map(toWire),
        ...(request.tools.length > 0
          ? {
              tools: request.tools.map((tool) => ({
                type: 'function' as const,
                function: { name: tool.name, description: tool.description, parameters: tool.parameters },
              })),
            }
          : {}),
      });
    } catch (error) {
      throw failureOf(error);
    }
    const message = completion?.choices?.[0]?.message;
    const toolCalls = (message?.tool_calls ?? []).flatMap((call) =>
      call.type === 'function' ? [{ id: call.id, name: call.function.name, arguments: call.function.arguments }] : [],
    );
    const content = typeof message?.content === 'string' && message.content.trim() !== '' ? message.content : null;
    if (content === null && toolCalls.length === 0)
      throw new AiUnavailable('empty', 'The model answered with neither a message nor a tool call.');
    return { content, toolCalls };
  }
}

function toWire(message: ConversationMessage): OpenAI.Chat.Completions.ChatCompletionMessageParam {
  switch (message.role) {
    case 'assistant':
      return {
        role: 'assistant',
        content: message.content,
        ...(message.toolCalls.length > 0
          ? {
              tool_calls: message.toolCalls.map((call) => ({
                id: call.id,
                type: 'function' as const,
                function: { name: call.name, arguments: call.arguments },
              })),
            }
          : {}),
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
    default:
      return { role: message.role, content: message.content };
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
