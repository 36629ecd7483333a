import t from 'tap';
import { OpenAiChatModel } from '../../infra/ai/openai.ts';
import { AiUnavailable, type ConverseRequest } from '../../infra/ai/port.ts';
import { readConfig } from '../../infra/config.ts';
import { startAiServer } from '../support/ai-server.ts';

/** Conversations with tools (what task runs will hold) against a loopback OpenAI-compatible server. */
const server = await startAiServer(t);
const model = new OpenAiChatModel({
  baseUrl: server.baseUrl,
  apiKey: server.apiKey,
  model: 'tiny-1',
  advancedModel: 'large-1',
  timeoutMs: 500,
});
const createDraft = {
  name: 'create_draft',
  description: 'Writes a draft.',
  parameters: { type: 'object', properties: { subject: { type: 'string' } }, required: ['subject'] },
};
const request: ConverseRequest = {
  model: 'standard',
  messages: [
    { role: 'system', content: 'You run a task.' },
    { role: 'user', content: 'Draft a reply.' },
  ],
  tools: [createDraft],
};

async function failure(promise: Promise<unknown>): Promise<AiUnavailable> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AiUnavailable) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

t.test('a tool call out and its result back, then the last word', async (t) => {
  server.reply = () => ({ content: null, toolCalls: [{ name: 'create_draft', arguments: '{"subject":"Re: Hi"}' }] });
  const first = await model.converse(request);
  t.same(first.content, null);
  t.match(first.toolCalls, [{ id: /^call_/, name: 'create_draft', arguments: '{"subject":"Re: Hi"}' }]);
  const sent = server.calls.at(-1)!.body;
  t.equal(sent.model, 'tiny-1');
  t.same(sent.tools, [{ type: 'function', function: createDraft }], 'tools go out as functions');

  server.reply = () => ({ content: 'Drafted.' });
  const last = await model.converse({
    ...request,
    messages: [
      ...request.messages,
      { role: 'assistant', content: null, toolCalls: first.toolCalls },
      { role: 'tool', toolCallId: first.toolCalls[0]!.id, content: '{"draftId":"drf_1"}' },
    ],
  });
  t.same(last, { content: 'Drafted.', toolCalls: [] });
  t.match(server.calls.at(-1)!.body.messages.slice(2), [
    {
      role: 'assistant',
      content: null,
      tool_calls: [{ id: first.toolCalls[0]!.id, type: 'function', function: { name: 'create_draft' } }],
    },
    { role: 'tool', tool_call_id: first.toolCalls[0]!.id, content: '{"draftId":"drf_1"}' },
  ]);
});

t.test('`advanced` asks for AI_MODEL_ADVANCED; without one, the standard model', async (t) => {
  server.reply = () => ({ content: 'ok' });
  await model.converse({ ...request, model: 'advanced' });
  t.equal(server.calls.at(-1)!.body.model, 'large-1');
  const plain = new OpenAiChatModel({
    baseUrl: server.baseUrl,
    apiKey: server.apiKey,
    model: 'tiny-1',
    timeoutMs: 500,
  });
  await plain.converse({ ...request, model: 'advanced', tools: [] });
  t.equal(server.calls.at(-1)!.body.model, 'tiny-1');
  t.equal(server.calls.at(-1)!.body.tools, undefined, 'no tools: none offered');
  const env = { AI_BASE_URL: server.baseUrl, AI_API_KEY: 'k', AI_MODEL: 'tiny-1' };
  t.equal(readConfig({ ...env, AI_MODEL_ADVANCED: 'large-1' }).ai?.advancedModel, 'large-1');
  t.equal(readConfig(env).ai?.advancedModel, undefined);
});

t.test('failures: neither content nor call is empty; 5xx refused; too slow a timeout', async (t) => {
  server.reply = () => ({ content: '  ' });
  t.equal((await failure(model.converse(request))).reason, 'empty');
  server.reply = () => ({ status: 503, error: { message: 'overloaded', type: 'server_error' } });
  t.match(await failure(model.converse(request)), { reason: 'refused', status: 503 });
  server.reply = () => ({ content: 'late', delayMs: 1500 });
  t.equal((await failure(model.converse(request))).reason, 'timeout');
});
