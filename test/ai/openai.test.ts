import net from 'node:net';
import t from 'tap';
import { OpenAiChatModel } from '../../infra/ai/openai.ts';
import { AiUnavailable } from '../../infra/ai/port.ts';
import { readConfig } from '../../infra/config.ts';
import { startAiServer } from '../support/ai-server.ts';

const request = { system: 'Be brief.', user: '{"subject":"Hi"}', json: true };

async function failure(promise: Promise<unknown>): Promise<AiUnavailable> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof AiUnavailable) return error;
    throw error;
  }
  throw new Error('expected the call to fail');
}

t.test('the adapter against a loopback OpenAI-compatible server', async (t) => {
  const server = await startAiServer(t);
  const model = new OpenAiChatModel({
    baseUrl: server.baseUrl,
    apiKey: server.apiKey,
    model: 'tiny-1',
    timeoutMs: 500,
  });

  t.test('a completion: the model, the key, both messages and JSON mode go out; the content comes back', async (t) => {
    server.reply = () => ({ content: '{"subject":"Hallo"}' });
    t.equal(await model.complete(request), '{"subject":"Hallo"}');
    const call = server.calls.at(-1)!;
    t.equal(call.path, '/v1/chat/completions');
    t.equal(call.authorization, `Bearer ${server.apiKey}`);
    t.equal(call.body.model, 'tiny-1');
    t.same(call.body.messages, [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: '{"subject":"Hi"}' },
    ]);
    t.same(call.body.response_format, { type: 'json_object' });
    await model.complete({ ...request, json: false });
    t.equal(server.calls.at(-1)!.body.response_format, undefined);
  });

  t.test('HTTP errors are refusals with the status, in our words, without retries', async (t) => {
    for (const status of [400, 429, 500, 503]) {
      const before = server.calls.length;
      server.reply = () => ({ status, error: { message: `upstream says ${server.apiKey}`, type: 'server_error' } });
      const e = await failure(model.complete(request));
      t.equal(e.reason, 'refused');
      t.equal(e.status, status);
      t.notMatch(e.message, server.apiKey, 'the endpoint’s words (which may echo the key) are not repeated');
      t.equal(server.calls.length, before + 1, 'asked once');
    }
  });

  t.test('a wrong key is a refusal (401), and the key is not in the message', async (t) => {
    const wrong = new OpenAiChatModel({ baseUrl: server.baseUrl, apiKey: 'sk-wrong', model: 'tiny-1', timeoutMs: 500 });
    const e = await failure(wrong.complete(request));
    t.match(e, { reason: 'refused', status: 401 });
    t.notMatch(e.message, 'sk-wrong');
  });

  t.test('a slow answer is a timeout after the configured time', async (t) => {
    server.reply = () => ({ content: '{}', delayMs: 2000 });
    const started = Date.now();
    const e = await failure(model.complete(request));
    t.equal(e.reason, 'timeout');
    t.ok(Date.now() - started < 1500, `gave up after ${Date.now() - started} ms`);
  });

  t.test('an answer without content, or not JSON at all, is empty', async (t) => {
    server.reply = () => ({ content: null });
    t.equal((await failure(model.complete(request))).reason, 'empty');
    server.reply = () => ({ content: '   ' });
    t.equal((await failure(model.complete(request))).reason, 'empty');
    server.reply = () => ({ raw: '<html>gateway</html>' });
    t.equal((await failure(model.complete(request))).reason, 'empty');
    server.reply = () => ({ raw: '{"choices":[]}' });
    t.equal((await failure(model.complete(request))).reason, 'empty');
  });

  t.test('nobody listening is unreachable', async (t) => {
    const port = await new Promise<number>((resolve) => {
      const probe = net.createServer().listen(0, '127.0.0.1', () => {
        const { port } = probe.address() as net.AddressInfo;
        probe.close(() => resolve(port));
      });
    });
    const gone = new OpenAiChatModel({
      baseUrl: `http://127.0.0.1:${port}/v1`,
      apiKey: 'k',
      model: 'tiny-1',
      timeoutMs: 500,
    });
    t.equal((await failure(gone.complete(request))).reason, 'unreachable');
  });
});

t.test('configuration: AI_BASE_URL, AI_API_KEY and AI_MODEL together or not at all', async (t) => {
  t.equal(readConfig({}).ai, null);
  t.equal(readConfig({}).aiDailyActions, 1000);
  t.match(
    readConfig({
      AI_BASE_URL: 'https://models.example/v1/',
      AI_API_KEY: 'sk-secret',
      AI_MODEL: 'm',
      AI_DAILY_ACTIONS: '5',
    }),
    {
      ai: { baseUrl: 'https://models.example/v1', apiKey: 'sk-secret', model: 'm', timeoutMs: 30_000 },
      aiDailyActions: 5,
    },
  );
  t.equal(
    readConfig({ AI_BASE_URL: 'http://127.0.0.1:8080/v1', AI_API_KEY: 'k', AI_MODEL: 'm', AI_TIMEOUT_MS: '1500' }).ai
      ?.timeoutMs,
    1500,
  );
  t.throws(
    () => readConfig({ AI_API_KEY: 'sk-secret', AI_MODEL: 'm' }),
    /AI_BASE_URL, AI_API_KEY and AI_MODEL go together/,
  );
  try {
    readConfig({ AI_BASE_URL: 'https://models.example/v1', AI_API_KEY: 'sk-secret' });
  } catch (error) {
    t.notMatch((error as Error).message, 'sk-secret', 'the key is never in the message');
  }
  t.throws(() => readConfig({ AI_BASE_URL: 'ftp://x/v1', AI_API_KEY: 'k', AI_MODEL: 'm' }), /http\(s\) URL/);
  t.throws(() => readConfig({ AI_BASE_URL: 'nonsense', AI_API_KEY: 'k', AI_MODEL: 'm' }), /http\(s\) URL/);
  t.throws(() => readConfig({ AI_DAILY_ACTIONS: '0' }), /AI_DAILY_ACTIONS/);
});

t.test('configuration: the task runner’s timings, each or none, in milliseconds', async (t) => {
  t.same(readConfig({}).taskRunner, {}, 'none set: the runner’s defaults');
  t.same(
    readConfig({ TASK_APPROVAL_TIMEOUT_MS: '86400000', TASK_START_WITHIN_MS: '3600000', TASK_STALE_AFTER_MS: '30001' })
      .taskRunner,
    { approvalTimeoutMs: 86_400_000, startWithinMs: 3_600_000, staleAfterMs: 30_001 },
  );
  t.same(readConfig({ TASK_START_WITHIN_MS: '1' }).taskRunner, { startWithinMs: 1 }, 'only those set');
  t.same(readConfig({ TASK_APPROVAL_TIMEOUT_MS: String(366 * 86_400_000) }).taskRunner, {
    approvalTimeoutMs: 366 * 86_400_000,
  });
  for (const [name, value] of <[string, string][]>[
    ['TASK_APPROVAL_TIMEOUT_MS', '0'],
    ['TASK_APPROVAL_TIMEOUT_MS', String(366 * 86_400_000 + 1)],
    ['TASK_START_WITHIN_MS', '1.5'],
    ['TASK_START_WITHIN_MS', '1h'],
    ['TASK_STALE_AFTER_MS', '-5'],
  ])
    t.throws(() => readConfig({ [name]: value }), new RegExp(`${name} must be milliseconds from 1 to 31622400000`));
  t.throws(
    () => readConfig({ TASK_STALE_AFTER_MS: '30000' }),
    /TASK_STALE_AFTER_MS must exceed AI_TIMEOUT_MS \(30000\)/,
    'a stale run is one past the model’s time',
  );
  t.throws(
    () => readConfig({ TASK_STALE_AFTER_MS: '90000', AI_TIMEOUT_MS: '120000' }),
    /must exceed AI_TIMEOUT_MS \(120000\)/,
  );
  t.equal(readConfig({ TASK_STALE_AFTER_MS: '120001', AI_TIMEOUT_MS: '120000' }).taskRunner.staleAfterMs, 120_001);
});
