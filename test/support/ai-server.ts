import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One chat-completions request as the server read it. */
export interface ChatCall {
  path: string;
  authorization: string | undefined;
  body: {
    model: string;
    /** `content` is null on an assistant turn that only called tools. */
    messages: {
      role: string;
      content: string;
      tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
      tool_call_id?: string;
    }[];
    response_format?: { type: string };
    tools?: { type: string; function: { name: string; description: string; parameters: object } }[];
  };
}

/**
 * What the server answers: a chat completion with `content` (and `toolCalls`, scripted calls of
 * the tools the request offered, given ids `call_<n>`), or an HTTP error, after `delayMs`.
 */
export type ChatReply =
  | { content: string | null; toolCalls?: { name: string; arguments: string }[]; delayMs?: number }
  | { status: number; error: { message: string; type: string; code?: string }; delayMs?: number }
  | { raw: string; status?: number; delayMs?: number };

/**
 * A loopback server speaking the OpenAI chat-completions protocol (`POST <base>/chat/completions`
 * with a Bearer key), as an OpenAI-compatible endpoint answers: completion objects, error
 * envelopes with their statuses, and as slow as told. `reply` decides each answer; every call is
 * recorded.
 */
export async function startAiServer(
  t: { teardown(fn: () => Promise<void> | void): void },
  apiKey = 'sk-test-loopback-secret',
) {
  const calls: ChatCall[] = [];
  const state = { reply: (_call: ChatCall): ChatReply => ({ content: '{}' }) };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const send = (status: number, body: string) => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json' }).end(body);
      };
      if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
        return send(404, JSON.stringify({ error: { message: 'Not found', type: 'invalid_request_error' } }));
      if (req.headers.authorization !== `Bearer ${apiKey}`)
        return send(
          401,
          JSON.stringify({ error: { message: 'Incorrect API key provided.', type: 'invalid_request_error' } }),
        );
      const call: ChatCall = {
        path: req.url,
        authorization: req.headers.authorization,
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')),
      };
      calls.push(call);
      const reply = state.reply(call);
      const answer = () => {
        if ('raw' in reply) return send(reply.status ?? 200, reply.raw);
        if ('status' in reply) return send(reply.status, JSON.stringify({ error: reply.error }));
        send(
          200,
          JSON.stringify({
            id: `chatcmpl-${calls.length}`,
            object: 'chat.completion',
            created: Math.floor(Date.now() / 1000),
            model: call.body.model,
            choices: [
              {
                index: 0,
                message: {
                  role: 'assistant',
                  content: reply.content,
                  ...(reply.toolCalls?.length
                    ? {
                        tool_calls: reply.toolCalls.map((call, i) => ({
                          id: `call_${calls.length}_${i}`,
                          type: 'function',
                          function: call,
                        })),
                      }
                    : {}),
                },
                finish_reason: reply.toolCalls?.length ? 'tool_calls' : 'stop',
                logprobs: null,
              },
            ],
            usage: { prompt_tokens: 10, completion_tokens: 10, total_tokens: 20 },
          }),
        );
      };
      if (reply.delayMs) setTimeout(answer, reply.delayMs).unref();
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return {
    calls,
    apiKey,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    /** How the next calls are answered. */
    set reply(fn: (call: ChatCall) => ChatReply) {
      state.reply = fn;
    },
  };
}

/**
 * A translator as a model would be: the user message's JSON parts back under the same keys, each
 * marked with the target language the system prompt names (`[de] Hello`).
 */
export function translator(call: ChatCall): ChatReply {
  const tag = /BCP 47: ([^)]+)\)/.exec(call.body.messages[0]!.content)?.[1] ?? '??';
  const parts = JSON.parse(call.body.messages[1]!.content) as Record<string, string>;
  const translated = Object.fromEntries(
    Object.entries(parts).map(([k, v]) => [
      k,
      k === 'html' ? v.replace(/>([^<]+)</g, `>[${tag}] $1<`) : `[${tag}] ${v}`,
    ]),
  );
  return { content: JSON.stringify(translated) };
}
