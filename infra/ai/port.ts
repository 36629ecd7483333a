/**
 * The AI port: one chat completion of a language model behind an OpenAI-compatible endpoint
 * (`AI_BASE_URL`, `AI_MODEL`, `AI_API_KEY`). One adapter (infra/ai/openai.ts) speaks the protocol
 * through the `openai` client; tests point it at a loopback server speaking the same protocol.
 * Translation at send time and the templates' design and redesign use it (`complete`); tasks
 * converse with it, calling tools (`converse`).
 */

export interface ChatRequest {
  /** What the model is told to do, and the shape of its answer. */
  system: string;
  /** The material to work on (the caller's content, untrusted). */
  user: string;
  /** Ask for one JSON object as the answer (`response_format: json_object`). */
  json: boolean;
}

export type AiFailureReason =
  /** No answer within the configured time. */
  | 'timeout'
  /** The endpoint could not be reached (refused, reset, DNS). */
  | 'unreachable'
  /** The endpoint answered with an HTTP error (401 wrong key, 429 its own limits, 5xx). */
  | 'refused'
  /** The endpoint answered 2xx without a message to read. */
  | 'empty';

/**
 * The model could not be used this time. The message is ours, never the endpoint's words (which
 * may echo a key or the prompt): safe to log; callers map it to their own 503.
 */
export class AiUnavailable extends Error {
  constructor(
    readonly reason: AiFailureReason,
    message: string,
    /** The endpoint's HTTP status, for `refused`. */
    readonly status: number | null = null,
  ) {
    super(message);
    this.name = 'AiUnavailable';
  }
}

/** A tool the model may call: a name, what it does, and its arguments as a JSON Schema object. */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A call the model asks for: its id (a tool result names it), the tool, the arguments as JSON text. */
export interface ToolCall {
  id: string;
  name: string;
  /** Unparsed: the model's text, which the caller validates like any input. */
  arguments: string;
}

/** One message of a conversation with tools, as the chat-completions protocol carries it. */
export type ConversationMessage =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls: ToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export interface ConverseRequest {
  /** `advanced`: the endpoint's `AI_MODEL_ADVANCED` (the standard model when none is set). */
  model: 'standard' | 'advanced';
  messages: ConversationMessage[];
  tools: ToolDefinition[];
}

/** The model's next turn: tool calls to make, or (with none) its last word. */
export interface Turn {
  content: string | null;
  toolCalls: ToolCall[];
}

export interface ChatModel {
  /** The model's answer text; rejects only with `AiUnavailable`. */
  complete(request: ChatRequest): Promise<string>;
  /** The model's next turn of a conversation with tools; rejects only with `AiUnavailable`. */
  converse(request: ConverseRequest): Promise<Turn>;
}
